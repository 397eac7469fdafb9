package kyverno

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	kyvernov1 "github.com/modwright/modwright/api/kyverno/v1"
	"github.com/modwright/modwright/internal/value"
)

// Kyverno's pod controllers, as the kinds of autogen rules name them.
var controllerGVK = map[string]string{
	"DaemonSet":             "apps/v1/DaemonSet",
	"Deployment":            "apps/v1/Deployment",
	"Job":                   "batch/v1/Job",
	"StatefulSet":           "apps/v1/StatefulSet",
	"ReplicaSet":            "apps/v1/ReplicaSet",
	"ReplicationController": "v1/ReplicationController",
	"CronJob":               "batch/v1/CronJob",
}

// The variable rewrites of an autogen rule: Pod paths moved under the
// pod template (a plain text replacement over the rule, as Kyverno's).
var (
	controllerPaths = strings.NewReplacer(
		"request.object.spec", "request.object.spec.template.spec",
		"request.oldObject.spec", "request.oldObject.spec.template.spec",
		"request.object.metadata", "request.object.spec.template.metadata",
		"request.oldObject.metadata", "request.oldObject.spec.template.metadata")
	controllerCELPaths = strings.NewReplacer(
		"object.spec", "object.spec.template.spec",
		"oldObject.spec", "oldObject.spec.template.spec",
		"object.metadata", "object.spec.template.metadata",
		"oldObject.metadata", "oldObject.spec.template.metadata")
	cronJobCELPaths = strings.NewReplacer(
		"object.spec", "object.spec.jobTemplate.spec.template.spec",
		"oldObject.spec", "oldObject.spec.jobTemplate.spec.template.spec",
		"object.metadata", "object.spec.jobTemplate.spec.template.metadata",
		"oldObject.metadata", "oldObject.spec.jobTemplate.spec.template.metadata")
	cronJobPaths = strings.NewReplacer(
		"request.object.spec", "request.object.spec.jobTemplate.spec.template.spec",
		"request.oldObject.spec", "request.oldObject.spec.jobTemplate.spec.template.spec",
		"request.object.metadata", "request.object.spec.jobTemplate.spec.template.metadata",
		"request.oldObject.metadata", "request.oldObject.spec.jobTemplate.spec.template.metadata")
)

// autogen compiles the rules Kyverno generates for pod controllers from
// the rules written for Pods: autogen-NAME for the controllers (their pod
// template), autogen-cronjob-NAME for CronJobs (their job's), as the
// pod-policies.kyverno.io/autogen-controllers annotation allows.
func (c *compiler) autogen(cp *kyvernov1.ClusterPolicy) []*rule {
	controllers, cronJob := autogenControllers(cp)
	if len(controllers) == 0 && !cronJob {
		return nil
	}
	var out []*rule
	for i := range cp.Spec.Rules {
		r := &cp.Spec.Rules[i]
		field := fmt.Sprintf("spec.rules[%d]", i)
		if strings.HasPrefix(r.Name, "autogen-") || !containsPod(kindsOf(&r.MatchResources)) || slices.Contains(c.broken, i) {
			continue
		}
		if r.ExcludeResources != nil {
			if ek := kindsOf(r.ExcludeResources); len(ek) > 0 && !containsPod(ek) {
				continue
			}
		}
		if len(controllers) > 0 {
			paths := controllerPaths
			if r.Validation != nil && r.Validation.CEL != nil {
				paths = controllerCELPaths
			}
			if g := generate(r, "autogen-", controllers, []string{"template"}, paths, false); g != nil {
				out = append(out, c.rule(field, g, r.Name))
			}
		}
		if cronJob {
			paths := cronJobPaths
			if r.Validation != nil && r.Validation.CEL != nil {
				paths = cronJobCELPaths
			}
			if g := generate(r, "autogen-cronjob-", []string{"CronJob"}, []string{"jobTemplate", "spec", "template"}, paths, true); g != nil {
				out = append(out, c.rule(field, g, r.Name))
			}
		}
	}
	return out
}

// autogenControllers are the controllers a policy's Pod rules extend to
// (sorted) and whether CronJobs are among them.
func autogenControllers(cp *kyvernov1.ClusterPolicy) ([]string, bool) {
	if !canAutogen(&cp.Spec) {
		return nil, false
	}
	actual := []string{"DaemonSet", "Deployment", "Job", "StatefulSet", "ReplicaSet", "ReplicationController", "CronJob"}
	if ann, ok := cp.Annotations[kyvernov1.AnnotationAutogen]; ok {
		actual = strings.Split(ann, ",") // not trimmed, as Kyverno
	}
	var ctrl []string
	cron := false
	for _, k := range actual {
		switch k {
		case "CronJob":
			cron = true
		case "DaemonSet", "Deployment", "Job", "StatefulSet", "ReplicaSet", "ReplicationController":
			ctrl = append(ctrl, k)
		}
	}
	slices.Sort(ctrl)
	return slices.Compact(ctrl), cron
}

// canAutogen is Kyverno's policy-wide test: no generate, no JSON patch,
// no names, selectors or annotations in a match or exclude, Pod never
// listed with other kinds, and some rule about Pods or controllers.
func canAutogen(spec *kyvernov1.Spec) bool {
	needed := false
	check := func(rd *kyvernov1.ResourceDescription) bool {
		if rd.Name != "" || len(rd.Names) > 0 || rd.Selector != nil || len(rd.Annotations) > 0 {
			return false
		}
		if len(rd.Kinds) > 1 && containsPod(rd.Kinds) {
			return false
		}
		for _, k := range rd.Kinds {
			if k == "Pod" || controllerGVK[k] != "" {
				needed = true
			}
		}
		return true
	}
	checkMatch := func(m *kyvernov1.MatchResources) bool {
		if !check(&m.ResourceDescription) {
			return false
		}
		for i := range m.Any {
			if !check(&m.Any[i].ResourceDescription) {
				return false
			}
		}
		for i := range m.All {
			if !check(&m.All[i].ResourceDescription) {
				return false
			}
		}
		return true
	}
	for i := range spec.Rules {
		r := &spec.Rules[i]
		if r.Generation != nil {
			return false
		}
		if r.Mutation != nil && strings.Contains(string(r.Mutation.Raw), `"patchesJson6902"`) {
			return false
		}
		if !checkMatch(&r.MatchResources) {
			return false
		}
		if r.ExcludeResources != nil && !checkMatch(r.ExcludeResources) {
			return false
		}
	}
	return needed
}

func kindsOf(m *kyvernov1.MatchResources) []string {
	out := slices.Clone(m.Kinds)
	for _, f := range m.Any {
		out = append(out, f.Kinds...)
	}
	for _, f := range m.All {
		out = append(out, f.Kinds...)
	}
	return out
}

// containsPod: one of the kind selectors names the Pod kind (Pod, v1/Pod).
func containsPod(ks []string) bool {
	return slices.ContainsFunc(ks, func(k string) bool {
		ps := strings.Split(k, "/")
		switch len(ps) {
		case 1:
			return k == "Pod"
		case 2:
			return reVersion.MatchString(ps[0]) && ps[1] == "Pod"
		case 3:
			return !reVersion.MatchString(ps[0]) && ps[2] == "Pod"
		}
		return false
	})
}

// generate builds an autogen rule from a Pod rule: its name, the
// controllers' kinds in its match (and exclude), its validate wrapped
// under the pod template (wrap: the keys leading there), its variables'
// paths rewritten. allFilters: every any/all filter gets the kinds (the
// CronJob rule), else only those naming Pods.
func generate(r *kyvernov1.Rule, prefix string, controllers, wrap []string, paths *strings.Replacer, allFilters bool) *kyvernov1.Rule {
	if r.Validation == nil && r.Mutation == nil {
		return nil // generate and verifyImages autogen come with their evaluation
	}
	g := *r
	g.Name = prefix + r.Name
	if len(g.Name) > 63 {
		g.Name = g.Name[:63]
	}
	gvks := make([]string, len(controllers))
	for i, k := range controllers {
		gvks[i] = controllerGVK[k]
	}
	g.MatchResources = rewriteKinds(r.MatchResources, gvks, allFilters, true)
	if r.ExcludeResources != nil {
		ex := rewriteKinds(*r.ExcludeResources, gvks, allFilters, false)
		g.ExcludeResources = &ex
	}
	if r.Mutation != nil {
		nm, ok := generateMutation(r.Mutation, wrap)
		if !ok {
			return nil
		}
		g.Mutation = nm
		return rewritePaths(&g, paths)
	}
	v := r.Validation
	nv := &kyvernov1.Validation{Message: v.Message, FailureAction: v.FailureAction, FailureActionOverrides: v.FailureActionOverrides,
		AllowExistingViolations: v.AllowExistingViolations}
	switch {
	case v.Pattern != nil:
		nv.Pattern = wrapRaw(v.Pattern, wrap)
	case v.Deny != nil:
		nv.Deny = v.Deny
	case v.PodSecurity != nil:
		nv.PodSecurity = v.PodSecurity
	case v.AnyPattern != nil:
		list, err := value.Decode(v.AnyPattern.Raw)
		items, ok := list.([]any)
		if err != nil || !ok {
			return nil
		}
		wrapped := make([]any, len(items))
		for i, it := range items {
			wrapped[i] = wrapValue(it, wrap)
		}
		nv.AnyPattern = rawOf(wrapped)
	case len(v.ForEach) > 0:
		nv.ForEach = v.ForEach
	case v.CEL != nil:
		nv.CEL = v.CEL
	default:
		return nil
	}
	g.Validation = nv
	return rewritePaths(&g, paths)
}

// generateMutation is a Pod rule's mutate for pod controllers, as Kyverno
// writes it: the patchStrategicMerge under the pod template; each foreach
// entry's list, context, preconditions and patchStrategicMerge (wrapped;
// Kyverno keeps nothing else of an entry). A policy with patchesJson6902
// gets no autogen rules at all (canAutogen).
func generateMutation(raw *apiextensionsv1.JSON, wrap []string) (*apiextensionsv1.JSON, bool) {
	var m kyvernov1.Mutation
	if err := json.Unmarshal(raw.Raw, &m); err != nil {
		return nil, false
	}
	var nm kyvernov1.Mutation
	switch {
	case m.PatchStrategicMerge != nil:
		nm.PatchStrategicMerge = wrapRaw(m.PatchStrategicMerge, wrap)
	case len(m.ForEach) > 0:
		for _, fe := range m.ForEach {
			var smp any
			if fe.PatchStrategicMerge != nil {
				var err error
				if smp, err = value.Decode(fe.PatchStrategicMerge.Raw); err != nil {
					return nil, false
				}
			}
			nm.ForEach = append(nm.ForEach, kyvernov1.ForEachMutation{List: fe.List, Context: fe.Context, Preconditions: fe.Preconditions,
				PatchStrategicMerge: rawOf(wrapValue(smp, wrap))})
		}
	default:
		return nil, false
	}
	return rawOf(nm), true
}

// rewritePaths rewrites the variables' paths of a generated rule, over the
// whole rule as text.
func rewritePaths(g *kyvernov1.Rule, paths *strings.Replacer) *kyvernov1.Rule {
	data, err := json.Marshal(g)
	if err != nil {
		return nil
	}
	var out kyvernov1.Rule
	if err := json.Unmarshal([]byte(paths.Replace(string(data))), &out); err != nil {
		return nil
	}
	return &out
}

func rewriteKinds(m kyvernov1.MatchResources, gvks []string, allFilters, match bool) kyvernov1.MatchResources {
	out := m
	rewrite := func(fs []kyvernov1.ResourceFilter) []kyvernov1.ResourceFilter {
		res := slices.Clone(fs)
		for i := range res {
			if allFilters || containsPod(res[i].Kinds) {
				res[i].Kinds = gvks
			}
		}
		return res
	}
	switch {
	case len(m.Any) > 0:
		out.Any = rewrite(m.Any)
	case len(m.All) > 0:
		out.All = rewrite(m.All)
	case match || len(m.Kinds) > 0:
		out.Kinds = gvks
	}
	return out
}

func wrapValue(v any, keys []string) any {
	for i := len(keys) - 1; i >= 0; i-- {
		v = map[string]any{keys[i]: v}
	}
	return map[string]any{"spec": v}
}

func wrapRaw(j *apiextensionsv1.JSON, keys []string) *apiextensionsv1.JSON {
	v, err := value.Decode(j.Raw)
	if err != nil {
		return j
	}
	return rawOf(wrapValue(v, keys))
}

func rawOf(v any) *apiextensionsv1.JSON {
	data, _ := json.Marshal(v)
	return &apiextensionsv1.JSON{Raw: data}
}
