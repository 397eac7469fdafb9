package kyverno_test

import (
	"context"
	"testing"
	"time"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/kyverno"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/value"
)

// FuzzPolicy compiles arbitrary Kyverno ClusterPolicies and CEL policies (JSON) and
// evaluates them on a Deployment and a Pod: nothing may panic, and every
// evaluation ends.
func FuzzPolicy(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "a"}, "spec": {"validationFailureAction": "Enforce", "rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, "validate": {"message": "{{ request.object.metadata.name }}", "pattern": {"spec": {"containers": [{"(image)": "nginx*", "=(securityContext)": {"=(privileged)": false}}]}}}}]}}`,
		`{"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "b"}, "spec": {"rules": [{"name": "r", "match": {"resources": {"kinds": ["Deployment"]}}, "preconditions": {"all": [{"key": "{{ request.operation }}", "operator": "Equals", "value": "CREATE"}]}, "validate": {"deny": {"conditions": {"any": [{"key": "{{ request.object.spec.replicas }}", "operator": "GreaterThan", "value": 2}]}}}}]}}`,
		`{"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "c"}, "spec": {"rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, "validate": {"foreach": [{"list": "request.object.spec.containers", "anyPattern": [{"image": "a/*"}, {"name": "x*"}]}]}}]}}`,
		`{"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "d"}, "spec": {"rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, "validate": {"cel": {"expressions": [{"expression": "size(object.spec.containers) < 2"}]}}}]}}`,
		`{"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "e"}, "spec": {"rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, "validate": {"podSecurity": {"level": "restricted", "exclude": [{"controlName": "Capabilities", "images": ["*"]}]}}}]}}`,
		`{"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "e2"}, "spec": {"rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, "validate": {"podSecurity": {"level": "baseline", "exclude": [{"controlName": "Privileged Containers", "images": ["nginx*"], "restrictedField": "spec.containers[*].securityContext.privileged", "values": ["true"]}, {"controlName": "Host Namespaces", "restrictedField": "spec.hostNetwork", "values": ["*"]}]}}}]}}`,
		`{"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "f"}, "spec": {"rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, "mutate": {"patchStrategicMerge": {"metadata": {"labels": {"+(team)": "x"}}, "spec": {"<(volumes)": [{"(hostPath)": {"path": "*"}}], "containers": [{"(image)": "*:1", "imagePullPolicy": "Always"}]}}}}]}}`,
		`{"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "g"}, "spec": {"rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, "mutate": {"patchesJson6902": "- op: add\n  path: /metadata/labels/x\n  value: '{{ request.object.metadata.name }}'"}}]}}`,
		`{"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "h"}, "spec": {"rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, "mutate": {"foreach": [{"list": "request.object.spec.containers", "order": "Ascending", "foreach": [{"list": "element.ports", "patchesJson6902": "[{\"op\": \"remove\", \"path\": \"/spec/containers/{{elementIndex0}}/ports/{{elementIndex1}}\"}]"}]}]}}]}}`,
		`{"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy", "metadata": {"name": "i"}, "spec": {"validationActions": ["Deny"], "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]}, "variables": [{"name": "n", "expression": "size(object.spec.containers)"}], "validations": [{"expression": "variables.n < 2", "messageExpression": "'too many: ' + string(variables.n)"}]}}`,
		`{"apiVersion": "policies.kyverno.io/v1", "kind": "GeneratingPolicy", "metadata": {"name": "k"}, "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]}, "generate": [{"template": {"interpolate": "cel", "value": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 'c-(( object.metadata.name ))', namespace: default}\ndata: (( {'a': 'b'} ))\n"}}]}}`,
		`{"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy", "metadata": {"name": "j"}, "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]}, "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{metadata: Object.metadata{labels: {'a': 'b'}}}"}}, {"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {'x': 'y'}}]"}}]}}`,
	} {
		f.Add(s)
	}
	objs := []string{
		`{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"}, "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "a", "image": "nginx"}]}}}}`,
		`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "labels": {"a": "b"}}, "spec": {"containers": [{"name": "a", "image": "nginx:1", "securityContext": {"privileged": true}}]}}`,
	}
	reg := kinds.NewRegistry(append(kyverno.NewKinds(), kyverno.NewCELKinds()...)...)
	f.Fuzz(func(t *testing.T, manifest string) {
		docs, err := source.ParseManifest("fuzz.json", []byte(manifest))
		if err != nil {
			return
		}
		res := source.LoadRules(docs, reg)
		var ok []engine.Rule
		for _, r := range res.Rules {
			if r.Info().Err == nil {
				ok = append(ok, r)
			}
		}
		if len(ok) == 0 {
			return
		}
		snap := engine.NewSnapshot(ok)
		for _, o := range objs {
			v, _ := value.Decode([]byte(o))
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, _ = engine.New(engine.Options{}).Evaluate(ctx, snap, engine.Request{Operation: rules.Create, Namespace: "default", Object: v})
			cancel()
		}
	})
}
