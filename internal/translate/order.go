package translate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modwright/modwright/api/v1alpha1"
	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/jsonpath"
)

// footprint is what a mutating rule reads (its criteria, its templates)
// and writes (its patch paths), as member paths; all: anything.
type footprint struct {
	mutating            bool
	readsAll, writesAll bool
	reads, writes       [][]string
	namespace           string // a ModRule's outside the cluster-rules namespace, else ""
}

// footprintOf is r's footprint: exact for ModRules, everything for the
// mutations of other kinds (CEL, CUE and the rest read and write anything).
func footprintOf(r Rule, o Options) footprint {
	switch r.Kind {
	case "ModRule":
		b, _ := json.Marshal(r.Object)
		var mr v1beta1.ModRule
		if err := json.Unmarshal(b, &mr); err != nil || mr.Spec.Type != v1beta1.ModRuleTypePatch {
			return footprint{}
		}
		f := footprint{mutating: true}
		if mr.Namespace != o.ClusterRulesNamespace && !(o.ClusterRulesNamespace == "" && mr.Namespace == "kubemod-system") {
			f.namespace = mr.Namespace
		}
		read := func(sel string) {
			if e, err := jsonpath.Parse(strings.TrimSpace(sel)); err == nil && !e.IsQuery() {
				// A computed condition reads the object's paths it names
				// ('@' at its top is the object too).
				f.reads = rootPaths(e.Tree(), true, f.reads)
				return
			}
			steps, err := parseSelect(sel)
			if err != nil {
				f.readsAll = true
				return
			}
			var p []string
			for _, s := range steps {
				// What a filter reads elsewhere in the object.
				f.reads = rootPaths(s.filter, false, f.reads)
			}
			for _, s := range steps {
				if s.wildcard || s.isIndex {
					break
				}
				p = append(p, s.name)
			}
			f.reads = append(f.reads, p)
		}
		for _, c := range mr.Spec.Match {
			read(c.Select)
		}
		for _, op := range mr.Spec.Patch {
			if op.Select != nil && *op.Select != "" {
				read(*op.Select)
			}
			if op.Value != nil && strings.Contains(*op.Value, "{{") {
				f.readsAll = true
			}
			var p []string
			for _, t := range strings.Split(strings.TrimPrefix(op.Path, "/"), "/") {
				if strings.Contains(t, "#") || t == "-" || strings.Trim(t, "-0123456789") == "" {
					break
				}
				p = append(p, strings.NewReplacer("~1", "/", "~0", "~").Replace(t))
			}
			f.writes = append(f.writes, p)
		}
		return f
	case v1alpha1.KindModwrightPolicy, v1alpha1.KindClusterModwrightPolicy: // Compile made former names current
		spec, _ := r.Object["spec"].(map[string]any)
		if ms, _ := spec["mutations"].([]any); len(ms) == 0 {
			return footprint{}
		}
	case "ValidatePolicy", "ClusterValidatePolicy":
		return footprint{}
	}
	return footprint{mutating: true, readsAll: true, writesAll: true}
}

// conflict reports why a and b, both mutating, do not commute: one writes
// what the other reads or writes. "" when they commute (or never meet).
func conflict(a, b footprint) string {
	if a.namespace != "" && b.namespace != "" && a.namespace != b.namespace {
		return ""
	}
	overlaps := func(w [][]string, all bool, other footprint, both bool) bool {
		if all && (len(other.reads) > 0 || other.readsAll || len(other.writes) > 0 || other.writesAll) {
			return true
		}
		for _, p := range w {
			if other.readsAll || both && other.writesAll {
				return true
			}
			for _, q := range other.reads {
				if related(p, q) {
					return true
				}
			}
			if both {
				for _, q := range other.writes {
					if related(p, q) {
						return true
					}
				}
			}
		}
		return false
	}
	switch {
	case overlaps(a.writes, a.writesAll, b, true), overlaps(b.writes, b.writesAll, a, false):
		return "one writes what the other reads or writes"
	}
	return ""
}

// ordered moves to skipped the translatable mutating rules whose result
// depends on their order with another mutating rule of the set: the API
// server runs admission policies in its own order (not executionTier),
// and all of them before the webhook.
func ordered(rules []Rule, cands []candidate, skipped []Skip, o Options) ([]candidate, []Skip) {
	fps := make([]footprint, len(rules))
	for i, r := range rules {
		fps[i] = footprintOf(r, o)
	}
	var kept []candidate
	for _, c := range cands {
		i := slices.IndexFunc(rules, func(r Rule) bool {
			return r.Origin == c.rule.Origin && r.Kind == c.rule.Kind && r.Key() == c.rule.Key()
		})
		why := ""
		for j := range rules {
			if j == i || !fps[i].mutating || !fps[j].mutating {
				continue
			}
			if c := conflict(fps[i], fps[j]); c != "" {
				why = fmt.Sprintf("its order with %s %s matters (%s): the API server runs admission policies in its own order, not by executionTier, and before the webhook", rules[j].Kind, rules[j].Key(), c)
				break
			}
		}
		if why != "" {
			skipped = append(skipped, Skip{Rule: c.rule, Reason: why})
			continue
		}
		kept = append(kept, c)
	}
	return kept, skipped
}

// rootPaths appends to paths the member names, up to the first other
// step (a prefix of what is read), of the object paths an expression
// reads: a computed condition ('@' is the object where top is true:
// outside filters) or a filter (its '@' paths are under the path it is on,
// which the select reads).
func rootPaths(t *jsonpath.Tree, top bool, paths [][]string) [][]string {
	if t == nil {
		return paths
	}
	if t.Kind == jsonpath.TreePath {
		if t.Current && !top {
			return paths
		}
		var p []string
		for _, s := range t.Steps {
			if s.Kind != jsonpath.StepName {
				break
			}
			p = append(p, s.Name)
		}
		paths = append(paths, p)
		for _, s := range t.Steps {
			paths = rootPaths(s.Filter, false, paths)
		}
		return paths
	}
	return rootPaths(t.Y, top, rootPaths(t.X, top, paths))
}
