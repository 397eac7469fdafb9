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

{{- /* The dragnet's rules, in the mutating and the validating webhook. */ -}}
{{- define "modwright.dragnetRules" -}}
rules:
  - operations: [CREATE, UPDATE, DELETE]
    apiGroups: ["*"]
    apiVersions: ["*"]
    resources:
      {{- range .Values.targetResources }}
      - {{ . }}
      {{- end }}
    scope: "*"
  # CONNECT (exec, attach, port-forward, proxies), for ModwrightPolicies whose
  # match.operations name it.
  - operations: [CONNECT]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: [pods/attach, pods/exec, pods/portforward, pods/proxy, services/proxy, nodes/proxy]
    scope: "*"
{{- end -}}
