// Package kyvernoautogen is Kyverno's autogen of its CEL policies: which
// pod controllers a Pod policy is generated for (Targets), and a
// ValidatingPolicy's and a MutatingPolicy's generated specs (VPol, MPol),
// their paths rewritten to the pod template. Shared by the kind that evaluates the policies
// (internal/kinds/kyverno) and the translation into admission policies
// (internal/translate); it knows neither, only Kyverno's API types.
package kyvernoautogen

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	kpoliciesv1 "github.com/modwright/modwright/api/kyverno/policies/v1"
)

// Target is one of the two groups of pod controllers Kyverno's
// autogen generates a CEL policy for: those with a pod template at
// spec.template, and CronJobs (spec.jobTemplate.spec.template).
type Target struct {
	Name, Template string
	Match          *admissionregistrationv1.MatchResources
}

// Targets are the targets of a Pod policy's autogen, as Kyverno
// decides them: only when the policy matches pods alone (one rule, core v1
// pods, no resource names, exclusions or object selector); every
// controller unless podControllers.controllers narrows them (an empty
// list: none).
func Targets(m *admissionregistrationv1.MatchResources, pc *kpoliciesv1.PodControllers) []Target {
	if m == nil || len(m.ExcludeResourceRules) > 0 || len(m.ResourceRules) != 1 ||
		(m.ObjectSelector != nil && (len(m.ObjectSelector.MatchLabels) > 0 || len(m.ObjectSelector.MatchExpressions) > 0)) {
		return nil
	}
	r := m.ResourceRules[0]
	if len(r.ResourceNames) > 0 || len(r.Operations) == 0 || !slices.Equal(r.APIGroups, []string{""}) || !slices.Equal(r.APIVersions, []string{"v1"}) || !slices.Equal(r.Resources, []string{"pods"}) {
		return nil
	}
	controllers := []string{"cronjobs", "daemonsets", "deployments", "jobs", "replicasets", "statefulsets"}
	if pc != nil && pc.Controllers != nil {
		controllers = slices.DeleteFunc(slices.Clone(controllers), func(c string) bool { return !slices.Contains(pc.Controllers, c) })
	}
	var out []Target
	for _, g := range []struct {
		name, template string
		resources      map[string][]string // by group
	}{
		{"pod controllers", "spec.template", map[string][]string{"apps": {"daemonsets", "deployments", "replicasets", "statefulsets"}, "batch": {"jobs"}}},
		{"cronjobs", "spec.jobTemplate.spec.template", map[string][]string{"batch": {"cronjobs"}}},
	} {
		var rules []admissionregistrationv1.NamedRuleWithOperations
		for _, group := range []string{"apps", "batch"} {
			var res []string
			for _, c := range g.resources[group] {
				if slices.Contains(controllers, c) {
					res = append(res, c)
				}
			}
			if len(res) > 0 {
				rules = append(rules, admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: r.Operations, Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"v1"}, Resources: res}}})
			}
		}
		if len(rules) > 0 {
			out = append(out, Target{Name: g.name, Template: g.template,
				Match: &admissionregistrationv1.MatchResources{ResourceRules: rules, NamespaceSelector: m.NamespaceSelector.DeepCopy()}})
		}
	}
	return out
}

// Generated is an autogen policy: its target's name (Target.Name) and
// spec.
type Generated[S any] struct {
	Name string
	Spec S
}

// VPol is a Pod ValidatingPolicy's autogen policies, as Kyverno
// generates them: every path under object and oldObject rewritten to the
// pod template, in the whole spec.
func VPol(spec *kpoliciesv1.ValidatingPolicySpec) []Generated[*kpoliciesv1.ValidatingPolicySpec] {
	var pc *kpoliciesv1.PodControllers
	if spec.Autogen != nil {
		pc = spec.Autogen.PodControllers
	}
	var out []Generated[*kpoliciesv1.ValidatingPolicySpec]
	for _, t := range Targets(spec.MatchConstraints, pc) {
		gen := spec.DeepCopy()
		gen.MatchConstraints, gen.Autogen = t.Match, nil
		b, err := json.Marshal(gen)
		if err != nil {
			continue
		}
		for _, from := range []string{"spec", "metadata"} {
			for _, root := range []string{"object.", "oldObject."} {
				b = rewritePath(b, root+from, root+t.Template+"."+from)
			}
		}
		var out1 kpoliciesv1.ValidatingPolicySpec
		if err := json.Unmarshal(b, &out1); err != nil {
			continue
		}
		out = append(out, Generated[*kpoliciesv1.ValidatingPolicySpec]{Name: t.Name, Spec: &out1})
	}
	return out
}

// rewritePath rewrites every occurrence of from in a policy's JSON text,
// as Kyverno's autogen does, except where from is followed by the member
// .namespace (the object's namespace is not the pod template's).
func rewritePath(text []byte, from, to string) []byte {
	var out []byte
	rest := text
	for {
		i := bytes.Index(rest, []byte(from))
		if i < 0 {
			return append(out, rest...)
		}
		out = append(out, rest[:i]...)
		after := rest[i+len(from):]
		// As Kyverno: every occurrence, even inside a longer name.
		if hasSegment(after, ".namespace") {
			out = append(out, from...)
		} else {
			out = append(out, to...)
		}
		rest = after
	}
}

// hasSegment: b starts with the member seg (".namespace"), whole.
func hasSegment(b []byte, seg string) bool {
	return bytes.HasPrefix(b, []byte(seg)) && (len(b) == len(seg) || !isIdent(b[len(seg)]))
}

func isIdent(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// The paths Kyverno's MutatingPolicy autogen rewrites (in matchConditions
// and ApplyConfiguration expressions only; JSONPatch expressions and
// variables stay as written, as in Kyverno).
var (
	reMPolSpec        = regexp.MustCompile(`\b(object|oldObject|Object)\.spec`)
	reMPolLabels      = regexp.MustCompile(`\b(object|oldObject|Object)\.metadata\.labels`)
	reMPolAnnotations = regexp.MustCompile(`\b(object|oldObject|Object)\.metadata\.annotations`)
)

// MPol is a Pod MutatingPolicy's autogen policies, as Kyverno
// generates them.
func MPol(spec *kpoliciesv1.MutatingPolicySpec) []Generated[*kpoliciesv1.MutatingPolicySpec] {
	var pc *kpoliciesv1.PodControllers
	if spec.Autogen != nil {
		pc = spec.Autogen.PodControllers
	}
	var out []Generated[*kpoliciesv1.MutatingPolicySpec]
	for _, t := range Targets(spec.MatchConstraints, pc) {
		gen := spec.DeepCopy()
		gen.MatchConstraints, gen.Autogen = t.Match, nil
		for i := range gen.MatchConditions {
			gen.MatchConditions[i].Expression = podToTemplate(gen.MatchConditions[i].Expression, t.Template)
		}
		for i := range gen.Mutations {
			if ac := gen.Mutations[i].ApplyConfiguration; ac != nil && ac.Expression != "" {
				ac.Expression = podToTemplate(ac.Expression, t.Template)
			}
		}
		out = append(out, Generated[*kpoliciesv1.MutatingPolicySpec]{Name: t.Name, Spec: gen})
	}
	return out
}

// podToTemplate rewrites a Pod expression for the pod template at
// template (spec.template or spec.jobTemplate.spec.template): the paths
// to spec, labels and annotations; an ApplyConfiguration's Object{...}
// wrapped down to the template.
func podToTemplate(expr, template string) string {
	expr = reMPolSpec.ReplaceAllString(expr, "${1}."+template+".spec")
	expr = reMPolLabels.ReplaceAllString(expr, "${1}."+template+".metadata.labels")
	expr = reMPolAnnotations.ReplaceAllString(expr, "${1}."+template+".metadata.annotations")
	rest, ok := strings.CutPrefix(strings.TrimSpace(expr), "Object")
	if !ok {
		return expr
	}
	body, ok := strings.CutPrefix(strings.TrimLeft(rest, " \t\r\n"), "{")
	if !ok {
		return expr
	}
	depth, end := 1, -1
	for i, r := range body {
		switch r {
		case '{':
			depth++
		case '}':
			depth--
		}
		if depth == 0 {
			end = i
			break
		}
	}
	if end <= 0 {
		return expr
	}
	// Object{spec: Object.spec{template: Object.spec.template{ BODY }}} for
	// spec.template; one level per segment of the template's path.
	segs := strings.Split(template, ".")
	var open, close strings.Builder
	open.WriteString("Object{")
	typ := "Object"
	for _, s := range segs {
		typ += "." + s
		open.WriteString(s + ": " + typ + "{")
		close.WriteString("}")
	}
	return open.String() + body[:end] + close.String() + "}" + body[end+1:]
}
