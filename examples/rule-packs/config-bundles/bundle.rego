package modwright.examples.config_bundles

import rego.v1

from := {"kind": "ConfigBundle", "namespace": input.metadata.namespace, "name": input.metadata.name}

derive contains edge if {
	some name in input.spec.configMaps
	edge := {
		"type": "USES_CONFIGMAP",
		"from": from,
		"to": {"kind": "ConfigMap", "namespace": input.metadata.namespace, "name": name},
	}
}

derive contains edge if {
	input.spec.secretName != ""
	edge := {
		"type": "USES_SECRET",
		"from": from,
		"to": {"kind": "Secret", "namespace": input.metadata.namespace, "name": input.spec.secretName},
	}
}
