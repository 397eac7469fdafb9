package modrule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/lang/gotemplate"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// ModRule's lint codes (kinds holds the ones every kind shares). They are
// stable: scripts and docs may refer to them.
const (
	codePlaceholder   = "E004" // a path placeholder #N the select cannot capture
	codeTemplateLimit = "E006" // a template exceeds a bound when the rule is applied to a sample
	codeNotIdempotent = "W101" // applying a Patch rule twice changes the object twice
	codeBooleanSelect = "W102" // a matcher on a select that yields a boolean is never used
	codeQuotedValue   = "W103" // a quoted matchValue can never equal a value's text
	codeClusterRule   = "W104" // a cluster rule without targetNamespaceRegex pinned to namespaced kinds
	codeKindsNever    = "W105" // $.kind criteria that can never hold together
	codeNotAString    = "W107" // a label or annotation value that is (or may render as) no string
	codeNoValue       = "W108" // a template rendered "<no value>": it read a missing key
)

var (
	_ kinds.Linter        = (*Rule)(nil)
	_ kinds.CompileLinter = (*KindAdapter)(nil)
)

// CompileFindings reports a ModRule manifest Compile refused: the shared
// findings (kinds.CompileFindings), with ModRule's hints, and E004 for a
// path placeholder its select cannot capture.
func (*KindAdapter) CompileFindings(m *kinds.Manifest, err error) []kinds.Finding {
	fs := kinds.CompileFindings(Kind, m, err)
	for i := range fs {
		f := &fs[i]
		switch {
		case f.Code == kinds.CodeUndecodable:
			f.Hint = "check the field names and types against docs/modrule.md"
		case strings.HasSuffix(f.Field, ".path") && strings.Contains(f.Message, "placeholder"):
			f.Code = codePlaceholder
			f.Hint = "only wildcards ([*]), filters ([?(...)]), slices, unions and .. capture keys: #0 is the first captured key"
		}
	}
	return fs
}

// Lint runs ModRule's warning checks on a rule that compiled (a broken
// rule has no findings of its own here: CompileFindings reports it): from
// its criteria and patches, then by applying it to samples (the given
// objects of the kinds it can see, and objects synthesised from its
// criteria).
func (r *Rule) Lint(ctx context.Context, origin string, samples []kinds.Manifest) []kinds.Finding {
	if r.Err != nil {
		return nil
	}
	clusterNS := r.clusterNS
	var out []kinds.Finding
	warn := func(code, field, msg, hint string) {
		out = append(out, kinds.Finding{Severity: kinds.SeverityWarning, Code: code, Origin: origin, Kind: Kind, Rule: r.Key, Field: field, Message: msg, Hint: hint})
	}
	objs := sampleObjects(r, samples)
	for i := range r.Criteria {
		c := &r.Criteria[i]
		if c.Select != nil && c.HasMatcher() {
			if src, ok := yieldsBoolean(ctx, c, objs); ok {
				warn(codeBooleanSelect, c.Field+".select",
					fmt.Sprintf("select %q yields a boolean (%s), which decides alone: the matcher is never used", c.Select.Source(), src),
					"drop the matcher and write the condition in select (e.g. '$.spec.hostNetwork == false'), or negate the criterion")
			}
		}
		quoted := slices.DeleteFunc(append(slices.Clone(c.Values), valueOrNone(c.Value)...), func(v string) bool { return !isQuoted(v) })
		for _, v := range quoted {
			field := c.Field + ".matchValues"
			if c.Value != nil {
				field = c.Field + ".matchValue"
			}
			warn(codeQuotedValue, field,
				fmt.Sprintf("%s is quoted: values are compared as text, so it only equals a string that itself holds the quotes", v),
				"write "+strings.Trim(v, `"'`)+" without the inner quotes (in YAML: matchValue: '"+strings.Trim(v, `"'`)+"')")
		}
	}
	if pinned := r.Kinds(); pinned != nil && len(pinned) == 0 {
		warn(codeKindsNever, "spec.match", "the $.kind criteria can never hold together: the rule never fires", "keep one $.kind criterion, or use matchValues")
	}
	if r.Namespace == clusterNS && r.TargetNamespaces == nil {
		var namespaced []string
		for _, k := range r.Kinds() {
			if !kinds.IsClusterScoped(k) {
				namespaced = append(namespaced, k)
			}
		}
		if len(namespaced) > 0 {
			warn(codeClusterRule, "spec.targetNamespaceRegex",
				fmt.Sprintf("a rule in the cluster-rules namespace %s without targetNamespaceRegex applies only to cluster-scoped objects, so it never fires for %s", clusterNS, strings.Join(namespaced, ", ")),
				"add targetNamespaceRegex (e.g. '.*') to apply it to other namespaces, or move the rule to the namespace of its objects")
		}
	}
	if r.Type == v1beta1.ModRuleTypePatch {
		if f, ok := r.checkIdempotent(ctx, origin, objs); ok {
			out = append(out, f)
		}
		out = append(out, r.lintValues(ctx, origin, objs)...)
	}
	return out
}

func valueOrNone(v *string) []string {
	if v == nil {
		return nil
	}
	return []string{*v}
}

func isQuoted(v string) bool {
	return len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'')
}

// yieldsBoolean reports whether a criterion's select yields a single
// boolean: a computed expression does so whatever the object (checked on
// an empty one), a path does so on a sample.
func yieldsBoolean(ctx context.Context, c *Criterion, objs []sample) (string, bool) {
	isBool := func(obj any) bool {
		vals, single, err := c.Select.Values(ctx, obj, nil)
		if err != nil || !single || len(vals) != 1 {
			return false
		}
		_, ok := vals[0].(bool)
		return ok
	}
	if !c.Select.IsPath() && isBool(map[string]any{}) {
		return "a comparison or boolean expression", true
	}
	for _, s := range objs {
		if isBool(s.obj) {
			return "on " + s.origin, true
		}
	}
	return "", false
}

// sample is an object a rule is tried on.
type sample struct {
	origin string
	obj    map[string]any
}

// sampleObjects returns the given samples of the kinds the rule can see,
// and objects synthesised from its criteria: one per pinned kind (a Pod
// when it pins none), with the values of its plain-path criteria filled in.
func sampleObjects(r *Rule, given []kinds.Manifest) []sample {
	var out []sample
	for i := range given {
		d := &given[i]
		if k := r.Kinds(); k == nil || slices.Contains(k, d.Kind()) {
			out = append(out, sample{origin: d.Origin, obj: d.Object})
		}
	}
	pinned := r.Kinds()
	if pinned == nil {
		pinned = []string{"Pod"}
	}
	for _, k := range pinned {
		obj := skeleton(k)
		for i := range r.Criteria {
			satisfy(obj, &r.Criteria[i])
		}
		out = append(out, sample{origin: "a synthesised " + k, obj: obj})
	}
	return out
}

// skeleton is a small but typical object of a kind.
func skeleton(kind string) map[string]any {
	meta := map[string]any{"name": "sample", "labels": map[string]any{"app": "sample"}}
	podSpec := func() map[string]any {
		return map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.25.3"}}}
	}
	template := func() map[string]any {
		return map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "sample"}}, "spec": podSpec()}
	}
	obj := map[string]any{"apiVersion": "v1", "kind": kind, "metadata": meta}
	switch kind {
	case "Pod":
		obj["spec"] = podSpec()
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet":
		obj["apiVersion"] = "apps/v1"
		obj["spec"] = map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "sample"}}, "template": template()}
	case "Job":
		obj["apiVersion"] = "batch/v1"
		obj["spec"] = map[string]any{"template": template()}
	case "CronJob":
		obj["apiVersion"] = "batch/v1"
		obj["spec"] = map[string]any{"schedule": "0 * * * *", "jobTemplate": map[string]any{"spec": map[string]any{"template": template()}}}
	case "Service":
		obj["spec"] = map[string]any{"selector": map[string]any{"app": "sample"}, "ports": []any{map[string]any{"port": json1(80)}}}
	case "ConfigMap", "Secret":
		obj["data"] = map[string]any{"key": "value"}
	}
	return obj
}

func json1(n int) json.Number { return json.Number(strconv.Itoa(n)) }

// plainPath matches one step of a canonical select: .name or ["name"].
var plainPath = regexp.MustCompile(`^(?:\.([A-Za-z_][A-Za-z0-9_]*)|\[("(?:[^"\\]|\\.)*")\])`)

// pathOf returns the member names of a select that is a plain path of
// names ($.a.b["c.d"]), or nil.
func pathOf(c *Criterion) []string {
	if c.Select == nil || !c.Select.IsPath() {
		return nil
	}
	s := c.Select.Canonical()
	if !strings.HasPrefix(s, "$") {
		return nil
	}
	s = s[1:]
	var names []string
	for s != "" {
		m := plainPath.FindStringSubmatch(s)
		if m == nil {
			return nil
		}
		name := m[1]
		if m[2] != "" {
			u, err := strconv.Unquote(m[2])
			if err != nil {
				return nil
			}
			name = u
		}
		names = append(names, name)
		s = s[len(m[0]):]
	}
	return names
}

// satisfy sets or removes the member a plain-path criterion tests so that
// the criterion holds; other criteria are left alone.
func satisfy(obj map[string]any, c *Criterion) {
	path := pathOf(c)
	if len(path) == 0 || path[0] == "kind" || path[0] == "syntheticRefs" {
		return
	}
	var val any
	switch {
	case c.Negate && !c.HasMatcher():
		removePath(obj, path)
		return
	case c.Negate || c.Regex != nil:
		return
	case c.Value != nil:
		val = *c.Value
	case len(c.Values) > 0:
		val = c.Values[0]
	default:
		if _, ok := value.Lookup(obj, path...); ok {
			return
		}
		val = "sample"
	}
	m := obj
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = val
}

func removePath(obj map[string]any, path []string) {
	m := obj
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			return
		}
		m = next
	}
	delete(m, path[len(path)-1])
}

// checkIdempotent applies a Patch rule to each sample, then again to the
// result: the second pass must change nothing.
func (r *Rule) checkIdempotent(ctx context.Context, origin string, objs []sample) (kinds.Finding, bool) {
	op := r.sampleOperation()
	for _, s := range objs {
		first, ops := kinds.ApplyAgain(ctx, r, s.obj, r.sampleNamespace(s.obj), op)
		if first != nil {
			for _, e := range first.Errors {
				if errors.Is(e, gotemplate.ErrLimit) {
					return kinds.Finding{Severity: kinds.SeverityError, Code: codeTemplateLimit, Origin: origin, Kind: Kind, Rule: r.Key, Field: e.Field,
						Message: fmt.Sprintf("applied to %s, %v", s.origin, e.Err),
						Hint:    "templates run under fixed bounds (docs/serve.md#limits): build smaller values, or loop less"}, true
				}
			}
		}
		if len(ops) == 0 {
			continue
		}
		return kinds.Finding{Severity: kinds.SeverityWarning, Code: codeNotIdempotent, Origin: origin, Kind: Kind, Rule: r.Key, Field: "spec.patch",
			Message: fmt.Sprintf("not idempotent: applied again to its own result on %s it changes the object again (%s)", s.origin, strings.Join(ops, "; ")),
			Hint:    "add a negated criterion that stops the rule once its change is there (e.g. select the added item with negate: true)"}, true
	}
	return kinds.Finding{}, false
}

// sampleOperation is the operation a sample is admitted under: CREATE, or
// UPDATE for a rule that does not react to CREATE.
func (r *Rule) sampleOperation() rules.Operation {
	if !r.Operations(rules.Create) {
		return rules.Update
	}
	return rules.Create
}

// sampleNamespace puts a sample where the rule applies: a cluster-scoped
// kind nowhere; else its own namespace (default when it names none),
// unless the rule is a namespaced rule's (its namespace) or has a
// targetNamespaceRegex that does not match (a namespace it matches).
func (r *Rule) sampleNamespace(obj map[string]any) string {
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	if ns == "" && !kinds.IsClusterScoped(kind) {
		ns = "default"
	}
	switch {
	case ns == "":
		return ""
	case r.Namespace != "" && r.Namespace != r.clusterNS:
		return r.Namespace
	case r.TargetNamespaces != nil && !r.TargetNamespaces.MatchString(ns):
		for _, cand := range []string{"default", "sample"} {
			if r.TargetNamespaces.MatchString(cand) {
				return cand
			}
		}
	}
	return ns
}
