package modrule

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/value"
)

// noValue is what a Go template prints for a missing map key.
const noValue = "<no value>"

// labelPath matches the patch paths that set a label or an annotation
// (group 3 non-empty) or a whole labels or annotations map (group 3 empty),
// of the object or of a nested template.
var labelPath = regexp.MustCompile(`(^|/)metadata/(labels|annotations)(/[^/]+)?$`)

// templateOnly matches a template text made of actions alone, so that its
// output is read as YAML as it is: "8080" becomes a number, "true" a
// boolean.
var templateOnly = regexp.MustCompile(`^\s*(\{\{[^}]*\}\}\s*)+$`)

// quoting names the template functions whose output is a quoted string.
var quoting = regexp.MustCompile(`\b(quote|squote|toJson|toRawJson|toPrettyJson)\b`)

// lintValues warns about label and annotation values that are not strings
// (W107) and about templates that render "<no value>" (W108): statically
// from the rule, then on each sample the rule applies to.
func (r *Rule) lintValues(ctx context.Context, origin string, objs []sample) []kinds.Finding {
	var out []kinds.Finding
	warned := map[string]bool{} // field+code, so each is reported once
	warn := func(code, field, msg, hint string) {
		if warned[field+code] {
			return
		}
		warned[field+code] = true
		out = append(out, kinds.Finding{Severity: kinds.SeverityWarning, Code: code, Origin: origin, Kind: Kind, Rule: r.Key, Field: field, Message: msg, Hint: hint})
	}
	const quoteHint = `quote the value: value: '"..."' for text, value: '"{{ ... }}"' for a template`
	for i := range r.Patches {
		p := &r.Patches[i]
		m := labelPath.FindStringSubmatch(p.Path.Source)
		if m == nil || p.Value == nil || p.Op == patch.Remove {
			continue
		}
		what := strings.TrimSuffix(m[2], "s") // label, annotation
		switch {
		case p.Value.Static():
			if member, v, bad := nonString(p.StaticValue, m[3] == ""); bad {
				warn(codeNotAString, p.Field+".value",
					fmt.Sprintf("value %q is read as YAML: the %s value%s is a JSON %s (%s), not a string, and the API server rejects the object", p.Value.Source(), what, member, value.TypeName(v), compact(v)),
					quoteHint)
			}
		case m[3] != "" && templateOnly.MatchString(p.Value.Source()) && !quoting.MatchString(p.Value.Source()):
			warn(codeNotAString, p.Field+".value",
				fmt.Sprintf("the %s value is a template alone: its output is read as YAML, so a text that looks like a number or boolean (\"8080\", \"true\") becomes one, and the API server rejects the object", what),
				quoteHint)
		}
	}
	if len(r.Patches) == 0 {
		return out
	}
	// On the samples: what the rule's operations really set.
	snap := engine.NewSnapshot([]engine.Rule{r})
	eng := engine.New(engine.Options{})
	op := r.sampleOperation()
	// A template that reads syntheticRefs renders "<no value>" on every
	// sample: lint has no Namespace or Node to serve.
	readsContext := map[string]bool{}
	for i := range r.Patches {
		if p := &r.Patches[i]; p.Value != nil && strings.Contains(p.Value.Source(), "syntheticRefs") {
			readsContext[p.Field] = true
		}
	}
	for _, s := range objs {
		req := kinds.OfflineRequest(s.obj, r.sampleNamespace(s.obj), op)
		dec, err := eng.Evaluate(ctx, snap, req)
		if err != nil || len(dec.Trace) == 0 {
			continue
		}
		tr := &dec.Trace[0]
		mt := TraceOf(tr)
		if mt == nil {
			continue
		}
		for j, o := range tr.Ops {
			if j >= len(mt.OpSources) {
				break
			}
			field := mt.OpSources[j].Field + ".value"
			if o.Op == patch.Remove {
				continue
			}
			if !readsContext[mt.OpSources[j].Field] && containsNoValue(o.Value) {
				warn(codeNoValue, field,
					fmt.Sprintf("on %s the template rendered %q at %s: it reads a key the object does not have", s.origin, noValue, o.Path),
					"guard the key: {{ with .Target.x }}{{ . }}{{ end }}, {{ .Target.x | default \"...\" }}, or a criterion that requires it")
			}
			if m := labelPath.FindStringSubmatch(o.Path.String()); m != nil {
				if member, v, bad := nonString(o.Value, m[3] == ""); bad {
					warn(codeNotAString, field,
						fmt.Sprintf("on %s the %s value%s is a JSON %s (%s), not a string: the API server rejects the object", s.origin, strings.TrimSuffix(m[2], "s"), member, value.TypeName(v), compact(v)),
						quoteHint)
				}
			}
		}
	}
	return out
}

// nonString finds the first value that is not a string: v itself for a
// single label, or a member of a whole map (member then names it).
func nonString(v any, whole bool) (member string, found any, bad bool) {
	if !whole {
		_, ok := v.(string)
		return "", v, !ok
	}
	m, ok := v.(map[string]any)
	if !ok {
		return "", nil, false // not a map: another problem, not this check's
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if _, ok := m[k].(string); !ok {
			return " of " + k, m[k], true
		}
	}
	return "", nil, false
}

// containsNoValue reports whether a string anywhere in v holds "<no value>".
func containsNoValue(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.Contains(x, noValue)
	case []any:
		for _, e := range x {
			if containsNoValue(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if containsNoValue(e) {
				return true
			}
		}
	}
	return false
}

func compact(v any) string {
	b, err := value.Encode(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}
