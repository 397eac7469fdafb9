package modwright.openshift.buildconfig

import rego.v1

self := {"kind": "BuildConfig", "namespace": input.metadata.namespace, "name": input.metadata.name}

to(kind, name) := {"kind": kind, "namespace": input.metadata.namespace, "name": name}

secrets contains n if n := input.spec.source.sourceSecret.name
secrets contains n if n := input.spec.output.pushSecret.name
secrets contains n if n := input.spec.source.secrets[_].secret.name
secrets contains n if {
	some strategy in ["sourceStrategy", "dockerStrategy", "customStrategy"]
	n := input.spec.strategy[strategy].pullSecret.name
}

derive contains {"type": "USES_SECRET", "from": self, "to": to("Secret", n)} if {
	some n in secrets
	n != ""
}

derive contains {"type": "USES_CONFIGMAP", "from": self, "to": to("ConfigMap", n)} if {
	n := input.spec.source.configMaps[_].configMap.name
	n != ""
}

derive contains {"type": "USES_SERVICEACCOUNT", "from": self, "to": to("ServiceAccount", n)} if {
	n := input.spec.serviceAccount
	n != ""
}
