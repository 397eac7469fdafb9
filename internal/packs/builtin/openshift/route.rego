package modwright.openshift.route

import rego.v1

self := {"kind": "Route", "namespace": input.metadata.namespace, "name": input.metadata.name}

backends contains b if {
	b := input.spec.to
}

backends contains b if {
	some b in input.spec.alternateBackends
}

derive contains edge if {
	some b in backends
	object.get(b, "kind", "Service") == "Service"
	b.name != ""
	edge := {"type": "ROUTES_TO", "from": self, "to": {"kind": "Service", "namespace": input.metadata.namespace, "name": b.name}}
}

derive contains edge if {
	name := input.spec.tls.externalCertificate.name
	name != ""
	edge := {"type": "USES_SECRET", "from": self, "to": {"kind": "Secret", "namespace": input.metadata.namespace, "name": name}}
}
