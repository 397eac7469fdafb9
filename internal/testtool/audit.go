package testtool

import "fmt"

// AuditRules are the background scan's measurement rules (BENCHMARKS.md):
// 100 rules of three kinds requiring the label team, 40 Kyverno
// ClusterPolicies (Audit, on Pods, Deployments or ConfigMaps of the
// scale-* namespaces), 30 ClusterModwrightPolicies (CEL, Audit) and 30
// ModRules (Reject, one in each of the first 30 namespaces scale-NN, of
// namespaces).
func AuditRules(namespaces int) []string {
	var out []string
	kinds := []string{"Pod", "Deployment", "ConfigMap"}
	for i := range 40 {
		out = append(out, fmt.Sprintf(`
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: scale-kyverno-%02d}
spec:
  validationFailureAction: Audit
  rules:
  - name: team-label
    match: {any: [{resources: {kinds: [%s], namespaces: ["scale-*"]}}]}
    validate:
      message: "the label team is required (%d)"
      pattern: {metadata: {labels: {team: "?*"}}}
`, i, kinds[i%3], i))
	}
	for i := range 30 {
		out = append(out, fmt.Sprintf(`
apiVersion: modwright.io/v1alpha1
kind: ClusterModwrightPolicy
metadata: {name: scale-cel-%02d}
spec:
  match:
    resources:
    - apiGroups: ["%s"]
      kinds: [%s]
  validationActions: [Audit]
  validations:
  - cel: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    message: "the label team is required (%d)"
`, i, []string{"", "", "apps"}[i%3], []string{"ConfigMap", "Pod", "Deployment"}[i%3], i))
	}
	for i := range 30 {
		out = append(out, fmt.Sprintf(`
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: scale-modrule-%02d, namespace: scale-%02d}
spec:
  type: Reject
  rejectMessage: "the label team is required (%d)"
  match:
  - select: '$.kind'
    matchValue: %s
  - select: '$.metadata.labels.team'
    negate: true
`, i, i%namespaces, i, kinds[i%3]))
	}
	return out
}
