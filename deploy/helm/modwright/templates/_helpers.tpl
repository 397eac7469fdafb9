{{- define "modwright.labels" -}}
app.kubernetes.io/name: modwright
app.kubernetes.io/instance: modwright
app.kubernetes.io/part-of: modwright
{{- end -}}

{{- define "modwright.selector" -}}
app.kubernetes.io/name: modwright
app.kubernetes.io/instance: modwright
{{- end -}}

{{- define "modwright.caInjection" -}}
{{- if .Values.certManager.enabled }}
  annotations:
    cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/modwright-webhook-cert
{{- end }}
{{- end -}}

{{- define "modwright.namespaceSelector" -}}
namespaceSelector:
  matchExpressions:
    - key: admission.kubemod.io/ignore
      operator: NotIn
      values: ["true"]
    # Never the release's own namespace (its Pods must start without
    # their own webhook) nor dragnet.excludedNamespaces (kube-system).
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values:
        - {{ .Release.Namespace }}
        {{- range .Values.dragnet.excludedNamespaces }}
        - {{ . }}
        {{- end }}
{{- end -}}
