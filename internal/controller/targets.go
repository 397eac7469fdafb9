package controller

import (
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
)

// DefaultTargetResources are the resources KubeMod's dragnet webhook
// intercepts by default, in its order.
func DefaultTargetResources() []string {
	return []string{
		"namespaces", "nodes", "configmaps", "persistentvolumeclaims", "persistentvolumes", "secrets",
		"services", "daemonsets", "deployments", "replicasets", "statefulsets", "horizontalpodautoscalers",
		"ingresses", "pods", "cronjobs", "jobs", "serviceaccounts", "clusterrolebindings", "clusterroles",
		"rolebindings", "roles",
	}
}

// DragnetOperations are the operations the dragnet intercepts.
func DragnetOperations() []admissionv1.OperationType {
	return []admissionv1.OperationType{admissionv1.Create, admissionv1.Update, admissionv1.Delete}
}

// TargetRules turns target resources into webhook rules. An entry is a
// plural resource name, in any API group ("deployments"), or
// "resource.group" for one group ("widgets.example.com"; "resource." with
// an empty group for the core group). Entries without a group share one
// rule; each group gets its own.
func TargetRules(resources []string) ([]admissionv1.RuleWithOperations, error) {
	anyGroup := []string{}
	byGroup := map[string][]string{}
	var groups []string
	for _, r := range resources {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		name, group, hasGroup := strings.Cut(r, ".")
		if name == "" || strings.ContainsAny(name, " */") && name != "*" {
			return nil, fmt.Errorf("target resource %q: want a plural resource name, optionally followed by .group", r)
		}
		if !hasGroup {
			if !slices.Contains(anyGroup, name) {
				anyGroup = append(anyGroup, name)
			}
			continue
		}
		if _, ok := byGroup[group]; !ok {
			groups = append(groups, group)
		}
		if !slices.Contains(byGroup[group], name) {
			byGroup[group] = append(byGroup[group], name)
		}
	}
	if len(anyGroup) == 0 && len(groups) == 0 {
		return nil, fmt.Errorf("no target resources")
	}
	all := admissionv1.AllScopes
	rule := func(groups, resources []string) admissionv1.RuleWithOperations {
		return admissionv1.RuleWithOperations{
			Operations: DragnetOperations(),
			Rule: admissionv1.Rule{
				APIGroups: groups, APIVersions: []string{"*"}, Resources: resources, Scope: &all,
			},
		}
	}
	var out []admissionv1.RuleWithOperations
	if len(anyGroup) > 0 {
		out = append(out, rule([]string{"*"}, anyGroup))
	}
	for _, g := range groups {
		out = append(out, rule([]string{g}, byGroup[g]))
	}
	// CONNECT (kubectl exec, attach, port-forward, proxies): a Policy's
	// match.operations may name it; the object is the connection's
	// options (PodExecOptions, ...).
	out = append(out, admissionv1.RuleWithOperations{
		Operations: []admissionv1.OperationType{admissionv1.Connect},
		Rule: admissionv1.Rule{
			APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: ConnectResources(), Scope: &all,
		},
	})
	return out, nil
}

// ConnectResources are the subresources whose CONNECT requests the
// dragnet intercepts.
func ConnectResources() []string {
	return []string{"pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "services/proxy", "nodes/proxy"}
}
