package gatekeeper_test

import (
	"strings"
	"testing"
)

// FuzzTemplate loads a template and a constraint of arbitrary text and
// reviews a Pod with them: nothing may panic, and every review ends.
func FuzzTemplate(f *testing.F) {
	f.Add(template, "spec: {parameters: {labels: [owner]}}", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: a}\n")
	f.Add(template, "spec: {enforcementAction: scoped, scopedEnforcementActions: [{action: warn, enforcementPoints: [{name: '*'}]}]}", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a, labels: {owner: x}}\n")
	f.Add(strings.Replace(template, "violation[", "violation contains ", 1), "spec: {match: {namespaceSelector: {matchLabels: {a: b}}, name: 'p*'}}", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {generateName: p-}\n")
	f.Fuzz(func(t *testing.T, tmpl, spec, obj string) {
		docs := tmpl + "\n---\napiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K8sRequiredLabels\nmetadata: {name: need}\n" + spec + "\n"
		res := load(t, docs)
		if len(res.Rules) == 0 || len(res.Errors) > 0 {
			return
		}
		snap := engineSnapshot(res)
		_ = reviewText(snap, obj)
	})
}
