package value

import "encoding/json"

// internKey returns b as a string without allocating when it is one of the
// object keys that recur throughout Kubernetes objects (and AdmissionReview
// envelopes): most keys of a typical object are among them.
func internKey(b []byte) (string, bool) {
	switch string(b) {
	case "ip":
		return "ip", true
	case "add":
		return "add", true
	case "app":
		return "app", true
	case "cpu":
		return "cpu", true
	case "csi":
		return "csi", true
	case "env":
		return "env", true
	case "key":
		return "key", true
	case "tls":
		return "tls", true
	case "tty":
		return "tty", true
	case "uid":
		return "uid", true
	case "args":
		return "args", true
	case "data":
		return "data", true
	case "drop":
		return "drop", true
	case "exec":
		return "exec", true
	case "grpc":
		return "grpc", true
	case "host":
		return "host", true
	case "http":
		return "http", true
	case "kind":
		return "kind", true
	case "mode":
		return "mode", true
	case "name":
		return "name", true
	case "path":
		return "path", true
	case "port":
		return "port", true
	case "spec":
		return "spec", true
	case "team":
		return "team", true
	case "tier":
		return "tier", true
	case "time":
		return "time", true
	case "type":
		return "type", true
	case "extra":
		return "extra", true
	case "group":
		return "group", true
	case "hosts":
		return "hosts", true
	case "image":
		return "image", true
	case "items":
		return "items", true
	case "patch":
		return "patch", true
	case "paths":
		return "paths", true
	case "phase":
		return "phase", true
	case "podIP":
		return "podIP", true
	case "ports":
		return "ports", true
	case "ready":
		return "ready", true
	case "rules":
		return "rules", true
	case "state":
		return "state", true
	case "stdin":
		return "stdin", true
	case "value":
		return "value", true
	case "claims":
		return "claims", true
	case "driver":
		return "driver", true
	case "dryRun":
		return "dryRun", true
	case "effect":
		return "effect", true
	case "groups":
		return "groups", true
	case "hostIP":
		return "hostIP", true
	case "labels":
		return "labels", true
	case "limits":
		return "limits", true
	case "medium":
		return "medium", true
	case "memory":
		return "memory", true
	case "number":
		return "number", true
	case "object":
		return "object", true
	case "paused":
		return "paused", true
	case "podIPs":
		return "podIPs", true
	case "prefix":
		return "prefix", true
	case "reason":
		return "reason", true
	case "scheme":
		return "scheme", true
	case "secret":
		return "secret", true
	case "status":
		return "status", true
	case "values":
		return "values", true
	case "weight":
		return "weight", true
	case "allowed":
		return "allowed", true
	case "backend":
		return "backend", true
	case "command":
		return "command", true
	case "divisor":
		return "divisor", true
	case "envFrom":
		return "envFrom", true
	case "fsGroup":
		return "fsGroup", true
	case "hostIPC":
		return "hostIPC", true
	case "hostPID":
		return "hostPID", true
	case "httpGet":
		return "httpGet", true
	case "imageID":
		return "imageID", true
	case "ingress":
		return "ingress", true
	case "manager":
		return "manager", true
	case "maxSkew":
		return "maxSkew", true
	case "message":
		return "message", true
	case "options":
		return "options", true
	case "preStop":
		return "preStop", true
	case "request":
		return "request", true
	case "running":
		return "running", true
	case "service":
		return "service", true
	case "sources":
		return "sources", true
	case "started":
		return "started", true
	case "subPath":
		return "subPath", true
	case "suspend":
		return "suspend", true
	case "version":
		return "version", true
	case "volumes":
		return "volumes", true
	case "waiting":
		return "waiting", true
	case "affinity":
		return "affinity", true
	case "audience":
		return "audience", true
	case "emptyDir":
		return "emptyDir", true
	case "exitCode":
		return "exitCode", true
	case "fieldRef":
		return "fieldRef", true
	case "fieldsV1":
		return "fieldsV1", true
	case "hostPath":
		return "hostPath", true
	case "hostPort":
		return "hostPort", true
	case "hostname":
		return "hostname", true
	case "maxSurge":
		return "maxSurge", true
	case "metadata":
		return "metadata", true
	case "nodeName":
		return "nodeName", true
	case "nodePort":
		return "nodePort", true
	case "operator":
		return "operator", true
	case "optional":
		return "optional", true
	case "pathType":
		return "pathType", true
	case "priority":
		return "priority", true
	case "protocol":
		return "protocol", true
	case "qosClass":
		return "qosClass", true
	case "readOnly":
		return "readOnly", true
	case "replicas":
		return "replicas", true
	case "requests":
		return "requests", true
	case "resource":
		return "resource", true
	case "response":
		return "response", true
	case "schedule":
		return "schedule", true
	case "selector":
		return "selector", true
	case "strategy":
		return "strategy", true
	case "template":
		return "template", true
	case "userInfo":
		return "userInfo", true
	case "username":
		return "username", true
	case "claimName":
		return "claimName", true
	case "clusterIP":
		return "clusterIP", true
	case "component":
		return "component", true
	case "configMap":
		return "configMap", true
	case "dnsConfig":
		return "dnsConfig", true
	case "dnsPolicy":
		return "dnsPolicy", true
	case "fieldPath":
		return "fieldPath", true
	case "lastState":
		return "lastState", true
	case "lifecycle":
		return "lifecycle", true
	case "mountPath":
		return "mountPath", true
	case "namespace":
		return "namespace", true
	case "oldObject":
		return "oldObject", true
	case "operation":
		return "operation", true
	case "partition":
		return "partition", true
	case "patchType":
		return "patchType", true
	case "postStart":
		return "postStart", true
	case "procMount":
		return "procMount", true
	case "projected":
		return "projected", true
	case "resources":
		return "resources", true
	case "runAsUser":
		return "runAsUser", true
	case "secretRef":
		return "secretRef", true
	case "sizeLimit":
		return "sizeLimit", true
	case "startTime":
		return "startTime", true
	case "startedAt":
		return "startedAt", true
	case "stdinOnce":
		return "stdinOnce", true
	case "subdomain":
		return "subdomain", true
	case "tcpSocket":
		return "tcpSocket", true
	case "valueFrom":
		return "valueFrom", true
	case "apiVersion":
		return "apiVersion", true
	case "binaryData":
		return "binaryData", true
	case "clusterIPs":
		return "clusterIPs", true
	case "conditions":
		return "conditions", true
	case "containers":
		return "containers", true
	case "controller":
		return "controller", true
	case "fieldsType":
		return "fieldsType", true
	case "finalizers":
		return "finalizers", true
	case "finishedAt":
		return "finishedAt", true
	case "generation":
		return "generation", true
	case "ipFamilies":
		return "ipFamilies", true
	case "preference":
		return "preference", true
	case "privileged":
		return "privileged", true
	case "runAsGroup":
		return "runAsGroup", true
	case "secretName":
		return "secretName", true
	case "stringData":
		return "stringData", true
	case "targetPort":
		return "targetPort", true
	case "terminated":
		return "terminated", true
	case "volumeMode":
		return "volumeMode", true
	case "workingDir":
		return "workingDir", true
	case "accessModes":
		return "accessModes", true
	case "annotations":
		return "annotations", true
	case "appProtocol":
		return "appProtocol", true
	case "completions":
		return "completions", true
	case "containerID":
		return "containerID", true
	case "defaultMode":
		return "defaultMode", true
	case "downwardAPI":
		return "downwardAPI", true
	case "environment":
		return "environment", true
	case "hostAliases":
		return "hostAliases", true
	case "hostNetwork":
		return "hostNetwork", true
	case "httpHeaders":
		return "httpHeaders", true
	case "jobTemplate":
		return "jobTemplate", true
	case "matchLabels":
		return "matchLabels", true
	case "parallelism":
		return "parallelism", true
	case "podAffinity":
		return "podAffinity", true
	case "requestKind":
		return "requestKind", true
	case "serviceName":
		return "serviceName", true
	case "subResource":
		return "subResource", true
	case "subresource":
		return "subresource", true
	case "tolerations":
		return "tolerations", true
	case "topologyKey":
		return "topologyKey", true
	case "backoffLimit":
		return "backoffLimit", true
	case "capabilities":
		return "capabilities", true
	case "configMapRef":
		return "configMapRef", true
	case "generateName":
		return "generateName", true
	case "loadBalancer":
		return "loadBalancer", true
	case "nodeAffinity":
		return "nodeAffinity", true
	case "nodeSelector":
		return "nodeSelector", true
	case "resizePolicy":
		return "resizePolicy", true
	case "restartCount":
		return "restartCount", true
	case "runAsNonRoot":
		return "runAsNonRoot", true
	case "secretKeyRef":
		return "secretKeyRef", true
	case "startupProbe":
		return "startupProbe", true
	case "volumeMounts":
		return "volumeMounts", true
	case "containerName":
		return "containerName", true
	case "containerPort":
		return "containerPort", true
	case "helm.sh/chart":
		return "helm.sh/chart", true
	case "labelSelector":
		return "labelSelector", true
	case "lastProbeTime":
		return "lastProbeTime", true
	case "livenessProbe":
		return "livenessProbe", true
	case "managedFields":
		return "managedFields", true
	case "periodSeconds":
		return "periodSeconds", true
	case "readyReplicas":
		return "readyReplicas", true
	case "restartPolicy":
		return "restartPolicy", true
	case "rollingUpdate":
		return "rollingUpdate", true
	case "schedulerName":
		return "schedulerName", true
	case "volumeDevices":
		return "volumeDevices", true
	case "collisionCount":
		return "collisionCount", true
	case "initContainers":
		return "initContainers", true
	case "ipFamilyPolicy":
		return "ipFamilyPolicy", true
	case "lastUpdateTime":
		return "lastUpdateTime", true
	case "maxUnavailable":
		return "maxUnavailable", true
	case "readinessProbe":
		return "readinessProbe", true
	case "seLinuxOptions":
		return "seLinuxOptions", true
	case "seccompProfile":
		return "seccompProfile", true
	case "serviceAccount":
		return "serviceAccount", true
	case "timeoutSeconds":
		return "timeoutSeconds", true
	case "updateStrategy":
		return "updateStrategy", true
	case "configMapKeyRef":
		return "configMapKeyRef", true
	case "currentReplicas":
		return "currentReplicas", true
	case "imagePullPolicy":
		return "imagePullPolicy", true
	case "minReadySeconds":
		return "minReadySeconds", true
	case "ownerReferences":
		return "ownerReferences", true
	case "podAffinityTerm":
		return "podAffinityTerm", true
	case "podAntiAffinity":
		return "podAntiAffinity", true
	case "requestResource":
		return "requestResource", true
	case "resourceVersion":
		return "resourceVersion", true
	case "securityContext":
		return "securityContext", true
	case "sessionAffinity":
		return "sessionAffinity", true
	case "updatedReplicas":
		return "updatedReplicas", true
	case "failureThreshold":
		return "failureThreshold", true
	case "imagePullSecrets":
		return "imagePullSecrets", true
	case "ingressClassName":
		return "ingressClassName", true
	case "matchExpressions":
		return "matchExpressions", true
	case "preemptionPolicy":
		return "preemptionPolicy", true
	case "resourceFieldRef":
		return "resourceFieldRef", true
	case "runtimeClassName":
		return "runtimeClassName", true
	case "storageClassName":
		return "storageClassName", true
	case "successThreshold":
		return "successThreshold", true
	case "volumeAttributes":
		return "volumeAttributes", true
	case "availableReplicas":
		return "availableReplicas", true
	case "concurrencyPolicy":
		return "concurrencyPolicy", true
	case "containerStatuses":
		return "containerStatuses", true
	case "creationTimestamp":
		return "creationTimestamp", true
	case "deletionTimestamp":
		return "deletionTimestamp", true
	case "ephemeral-storage":
		return "ephemeral-storage", true
	case "expirationSeconds":
		return "expirationSeconds", true
	case "nodeSelectorTerms":
		return "nodeSelectorTerms", true
	case "pod-template-hash":
		return "pod-template-hash", true
	case "priorityClassName":
		return "priorityClassName", true
	case "tolerationSeconds":
		return "tolerationSeconds", true
	case "whenUnsatisfiable":
		return "whenUnsatisfiable", true
	case "blockOwnerDeletion":
		return "blockOwnerDeletion", true
	case "enableServiceLinks":
		return "enableServiceLinks", true
	case "lastTransitionTime":
		return "lastTransitionTime", true
	case "observedGeneration":
		return "observedGeneration", true
	case "requestSubResource":
		return "requestSubResource", true
	case "serviceAccountName":
		return "serviceAccountName", true
	case "supplementalGroups":
		return "supplementalGroups", true
	case "ephemeralContainers":
		return "ephemeralContainers", true
	case "fsGroupChangePolicy":
		return "fsGroupChangePolicy", true
	case "initialDelaySeconds":
		return "initialDelaySeconds", true
	case "podManagementPolicy":
		return "podManagementPolicy", true
	case "serviceAccountToken":
		return "serviceAccountToken", true
	case "unavailableReplicas":
		return "unavailableReplicas", true
	case "revisionHistoryLimit":
		return "revisionHistoryLimit", true
	case "volumeClaimTemplates":
		return "volumeClaimTemplates", true
	case "activeDeadlineSeconds":
		return "activeDeadlineSeconds", true
	case "externalTrafficPolicy":
		return "externalTrafficPolicy", true
	case "initContainerStatuses":
		return "initContainerStatuses", true
	case "internalTrafficPolicy":
		return "internalTrafficPolicy", true
	case "persistentVolumeClaim":
		return "persistentVolumeClaim", true
	case "shareProcessNamespace":
		return "shareProcessNamespace", true
	case "app.kubernetes.io/name":
		return "app.kubernetes.io/name", true
	case "readOnlyRootFilesystem":
		return "readOnlyRootFilesystem", true
	case "terminationMessagePath":
		return "terminationMessagePath", true
	case "progressDeadlineSeconds":
		return "progressDeadlineSeconds", true
	case "ttlSecondsAfterFinished":
		return "ttlSecondsAfterFinished", true
	case "allowPrivilegeEscalation":
		return "allowPrivilegeEscalation", true
	case "controller-revision-hash":
		return "controller-revision-hash", true
	case "terminationMessagePolicy":
		return "terminationMessagePolicy", true
	case "app.kubernetes.io/part-of":
		return "app.kubernetes.io/part-of", true
	case "app.kubernetes.io/version":
		return "app.kubernetes.io/version", true
	case "topologySpreadConstraints":
		return "topologySpreadConstraints", true
	case "app.kubernetes.io/instance":
		return "app.kubernetes.io/instance", true
	case "deletionGracePeriodSeconds":
		return "deletionGracePeriodSeconds", true
	case "app.kubernetes.io/component":
		return "app.kubernetes.io/component", true
	case "app.kubernetes.io/managed-by":
		return "app.kubernetes.io/managed-by", true
	case "automountServiceAccountToken":
		return "automountServiceAccountToken", true
	case "terminationGracePeriodSeconds":
		return "terminationGracePeriodSeconds", true
	case "deployment.kubernetes.io/revision":
		return "deployment.kubernetes.io/revision", true
	case "kubectl.kubernetes.io/restartedAt":
		return "kubectl.kubernetes.io/restartedAt", true
	case "requiredDuringSchedulingIgnoredDuringExecution":
		return "requiredDuringSchedulingIgnoredDuringExecution", true
	case "preferredDuringSchedulingIgnoredDuringExecution":
		return "preferredDuringSchedulingIgnoredDuringExecution", true
	case "kubectl.kubernetes.io/last-applied-configuration":
		return "kubectl.kubernetes.io/last-applied-configuration", true
	}
	return "", false
}

// internString returns b as a tree value without allocating when it is one
// of the string values common in Kubernetes objects.
func internString(b []byte) (any, bool) {
	switch string(b) {
	case "In":
		return "In", true
	case "v1":
		return "v1", true
	case "25%":
		return "25%", true
	case "50%":
		return "50%", true
	case "ALL":
		return "ALL", true
	case "Job":
		return "Job", true
	case "Pod":
		return "Pod", true
	case "TCP":
		return "TCP", true
	case "UDP":
		return "UDP", true
	case "100%":
		return "100%", true
	case "File":
		return "File", true
	case "HTTP":
		return "HTTP", true
	case "IPv4":
		return "IPv4", true
	case "IPv6":
		return "IPv6", true
	case "None":
		return "None", true
	case "SCTP":
		return "SCTP", true
	case "True":
		return "True", true
	case "Apply":
		return "Apply", true
	case "Equal":
		return "Equal", true
	case "Exact":
		return "Exact", true
	case "False":
		return "False", true
	case "HTTPS":
		return "HTTPS", true
	case "Local":
		return "Local", true
	case "Never":
		return "Never", true
	case "NotIn":
		return "NotIn", true
	case "Ready":
		return "Ready", true
	case "Always":
		return "Always", true
	case "CREATE":
		return "CREATE", true
	case "DELETE":
		return "DELETE", true
	case "Exists":
		return "Exists", true
	case "Failed":
		return "Failed", true
	case "Memory":
		return "Memory", true
	case "Opaque":
		return "Opaque", true
	case "Prefix":
		return "Prefix", true
	case "Secret":
		return "Secret", true
	case "UPDATE":
		return "UPDATE", true
	case "Update":
		return "Update", true
	case "CONNECT":
		return "CONNECT", true
	case "Cluster":
		return "Cluster", true
	case "CronJob":
		return "CronJob", true
	case "Default":
		return "Default", true
	case "Ingress":
		return "Ingress", true
	case "Pending":
		return "Pending", true
	case "Running":
		return "Running", true
	case "Service":
		return "Service", true
	case "Unknown":
		return "Unknown", true
	case "apps/v1":
		return "apps/v1", true
	case "default":
		return "default", true
	case "FieldsV1":
		return "FieldsV1", true
	case "NodePort":
		return "NodePort", true
	case "OnDelete":
		return "OnDelete", true
	case "Parallel":
		return "Parallel", true
	case "Recreate":
		return "Recreate", true
	case "batch/v1":
		return "batch/v1", true
	case "Available":
		return "Available", true
	case "Burstable":
		return "Burstable", true
	case "ClusterIP":
		return "ClusterIP", true
	case "ConfigMap":
		return "ConfigMap", true
	case "DaemonSet":
		return "DaemonSet", true
	case "Namespace":
		return "Namespace", true
	case "NoExecute":
		return "NoExecute", true
	case "OnFailure":
		return "OnFailure", true
	case "Succeeded":
		return "Succeeded", true
	case "policy/v1":
		return "policy/v1", true
	case "BestEffort":
		return "BestEffort", true
	case "Deployment":
		return "Deployment", true
	case "Filesystem":
		return "Filesystem", true
	case "Guaranteed":
		return "Guaranteed", true
	case "NoSchedule":
		return "NoSchedule", true
	case "ReplicaSet":
		return "ReplicaSet", true
	case "Initialized":
		return "Initialized", true
	case "Progressing":
		return "Progressing", true
	case "SingleStack":
		return "SingleStack", true
	case "StatefulSet":
		return "StatefulSet", true
	case "kube-system":
		return "kube-system", true
	case "ClusterFirst":
		return "ClusterFirst", true
	case "DoesNotExist":
		return "DoesNotExist", true
	case "ExternalName":
		return "ExternalName", true
	case "IfNotPresent":
		return "IfNotPresent", true
	case "LoadBalancer":
		return "LoadBalancer", true
	case "OrderedReady":
		return "OrderedReady", true
	case "PodScheduled":
		return "PodScheduled", true
	case "ReadOnlyMany":
		return "ReadOnlyMany", true
	case "ReadWriteMany":
		return "ReadWriteMany", true
	case "ReadWriteOnce":
		return "ReadWriteOnce", true
	case "RollingUpdate":
		return "RollingUpdate", true
	case "RuntimeDefault":
		return "RuntimeDefault", true
	case "ServiceAccount":
		return "ServiceAccount", true
	case "autoscaling/v2":
		return "autoscaling/v2", true
	case "ContainersReady":
		return "ContainersReady", true
	case "PreferNoSchedule":
		return "PreferNoSchedule", true
	case "ReplicaSetUpdated":
		return "ReplicaSetUpdated", true
	case "default-scheduler":
		return "default-scheduler", true
	case "/dev/termination-log":
		return "/dev/termination-log", true
	case "networking.k8s.io/v1":
		return "networking.k8s.io/v1", true
	case "FallbackToLogsOnError":
		return "FallbackToLogsOnError", true
	case "PersistentVolumeClaim":
		return "PersistentVolumeClaim", true
	case "ImplementationSpecific":
		return "ImplementationSpecific", true
	case "NewReplicaSetAvailable":
		return "NewReplicaSetAvailable", true
	case "kubernetes.io/hostname":
		return "kubernetes.io/hostname", true
	case "ClusterFirstWithHostNet":
		return "ClusterFirstWithHostNet", true
	case "MinimumReplicasAvailable":
		return "MinimumReplicasAvailable", true
	case "topology.kubernetes.io/zone":
		return "topology.kubernetes.io/zone", true
	case "rbac.authorization.k8s.io/v1":
		return "rbac.authorization.k8s.io/v1", true
	}
	return nil, false
}

// internNumber returns b as a tree value without allocating when it is a
// small integer common in Kubernetes objects.
func internNumber(b []byte) (any, bool) {
	switch string(b) {
	case "0":
		return json.Number("0"), true
	case "1":
		return json.Number("1"), true
	case "2":
		return json.Number("2"), true
	case "3":
		return json.Number("3"), true
	case "4":
		return json.Number("4"), true
	case "5":
		return json.Number("5"), true
	case "6":
		return json.Number("6"), true
	case "7":
		return json.Number("7"), true
	case "8":
		return json.Number("8"), true
	case "9":
		return json.Number("9"), true
	case "10":
		return json.Number("10"), true
	case "30":
		return json.Number("30"), true
	case "60":
		return json.Number("60"), true
	case "80":
		return json.Number("80"), true
	case "100":
		return json.Number("100"), true
	case "120":
		return json.Number("120"), true
	case "300":
		return json.Number("300"), true
	case "420":
		return json.Number("420"), true
	case "443":
		return json.Number("443"), true
	case "493":
		return json.Number("493"), true
	case "600":
		return json.Number("600"), true
	case "3000":
		return json.Number("3000"), true
	case "8000":
		return json.Number("8000"), true
	case "8080":
		return json.Number("8080"), true
	case "8443":
		return json.Number("8443"), true
	case "9090":
		return json.Number("9090"), true
	case "65534":
		return json.Number("65534"), true
	}
	return nil, false
}
