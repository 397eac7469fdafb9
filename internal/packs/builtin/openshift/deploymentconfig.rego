package modwright.openshift.deploymentconfig

import rego.v1

self := {"kind": "DeploymentConfig", "namespace": input.metadata.namespace, "name": input.metadata.name}

spec := input.spec.template.spec

to(kind, name) := {"kind": kind, "namespace": input.metadata.namespace, "name": name}

containers contains c if {
	some field in ["initContainers", "containers", "ephemeralContainers"]
	some c in object.get(spec, field, [])
}

configmaps contains n if n := spec.volumes[_].configMap.name
configmaps contains n if n := spec.volumes[_].projected.sources[_].configMap.name
configmaps contains n if {
	some c in containers
	n := c.env[_].valueFrom.configMapKeyRef.name
}
configmaps contains n if {
	some c in containers
	n := c.envFrom[_].configMapRef.name
}

secrets contains n if n := spec.volumes[_].secret.secretName
secrets contains n if n := spec.volumes[_].projected.sources[_].secret.name
secrets contains n if n := spec.imagePullSecrets[_].name
secrets contains n if {
	some c in containers
	n := c.env[_].valueFrom.secretKeyRef.name
}
secrets contains n if {
	some c in containers
	n := c.envFrom[_].secretRef.name
}

derive contains {"type": "USES_CONFIGMAP", "from": self, "to": to("ConfigMap", n)} if {
	some n in configmaps
	n != ""
}

derive contains {"type": "USES_SECRET", "from": self, "to": to("Secret", n)} if {
	some n in secrets
	n != ""
}

derive contains {"type": "MOUNTS_VOLUME", "from": self, "to": to("PersistentVolumeClaim", n)} if {
	n := spec.volumes[_].persistentVolumeClaim.claimName
	n != ""
}

derive contains {"type": "USES_SERVICEACCOUNT", "from": self, "to": to("ServiceAccount", n)} if {
	n := object.get(spec, "serviceAccountName", object.get(spec, "serviceAccount", ""))
	n != ""
}
