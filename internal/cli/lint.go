package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/suite"
	"github.com/modwright/modwright/internal/template"
	"github.com/modwright/modwright/internal/value"
)

// Lint codes. They are stable: scripts and docs may refer to them.
const (
	codeUnreadable    = "E001" // a file cannot be parsed
	codeUndecodable   = "E002" // a ModRule cannot be decoded (unknown field, wrong type)
	codeInvalid       = "E003" // a ModRule fails validation (field and position named)
	codePlaceholder   = "E004" // a path placeholder #N the select cannot capture
	codeNotIdempotent = "W101" // applying a Patch rule twice changes the object twice
	codeBooleanSelect = "W102" // a matcher on a select that yields a boolean is never used
	codeQuotedValue   = "W103" // a quoted matchValue can never equal a value's text
	codeClusterRule   = "W104" // a cluster rule without targetNamespaceRegex pinned to namespaced kinds
	codeKindsNever    = "W105" // $.kind criteria that can never hold together
	codeDuplicate     = "E005" // two documents define the same rule
	codeTemplateLimit = "E006" // a template exceeds a bound when the rule is applied to a sample
	codeNotAString    = "W107" // a label or annotation value that is (or may render as) no string
	codeNoValue       = "W108" // a template rendered "<no value>": it read a missing key
)

type lintOptions struct {
	rules        []string
	files        []string
	clusterRules string
	strict       bool
	output       string
}

func newLintCmd(s Streams) *cobra.Command {
	o := &lintOptions{}
	cmd := &cobra.Command{
		Use:   "lint [PATH]... [--rules PATH]... [-f SAMPLES]... [flags]",
		Short: "Validate ModRules as the webhook would, and warn about common mistakes",
		Long: `lint validates the ModRules in PATH and --rules PATH (files or directories,
recursive; .yaml, .yml, .json) exactly as the webhook and apply load them, reporting every
error with its file, document, rule, field and position, and warns about
rules that load but will not do what their author meant. Each finding has a
stable code and a hint:

  E001  a file cannot be parsed as YAML or JSON
  E002  a ModRule cannot be decoded (unknown field, wrong type)
  E003  a ModRule is invalid (for example a bad select, regex, template, or
        a bad path)
  E004  a path placeholder #N that the patch item's select cannot capture
        (KubeMod leaves it in the path; the webhook refuses the rule)
  E005  two documents define the same rule (namespace/name): apply and serve
        refuse to load such a set, since one would silently replace the other
  E006  a patch value template exceeds one of the bounds templates run
        under (output size, generated list length, loop iterations, work,
        value depth) when the rule is applied to a sample object
  W101  a Patch rule is not idempotent: applied a second time to its own
        result it changes the object again (KubeMod re-applies rules on
        every UPDATE, so an append to /-1 without a negated guard grows the
        list forever). Checked on the objects given with -f and on sample
        objects synthesised from the rule's criteria.
  W102  matchValue, matchValues or matchRegex on a select that yields a
        boolean: the boolean decides alone and the matcher is never used
  W103  a matchValue or matchValues entry in quotes ('"true"'): values are
        compared as text, so it can never equal true or an annotation value
  W104  a rule in the cluster-rules namespace without targetNamespaceRegex
        that targets namespaced kinds: it only ever sees cluster-scoped
        objects, so it never fires for them
  W105  $.kind criteria that can never hold together
  W107  a label or annotation set to a value that is not a string (value:
        true, 8080), or to a template alone (value: '{{ ... }}') whose text
        becomes a number or boolean when it looks like one (a namespace
        label such as "8080"): the API server rejects the object. Quote it:
        value: '"{{ ... }}"'
  W108  a template rendered "<no value>" on a sample: it reads a key the
        object does not have (guard it with 'with', 'default' or 'hasKey')

Rule templates run under the same bounds as in admission (docs/serve.md).
Documents that are not ModRules are ignored.

Exit status: 0 when no rule has an error (warnings are printed), or, with
--strict, when there is no finding at all; 1 otherwise; 2 when a path cannot
be read.`,
		Example: `  modwright lint examples/rules
  modwright lint rules/ -f manifests/ --strict
  modwright lint rules/ -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths := append(args, o.rules...)
			if len(paths) == 0 {
				return usageError("give the rules to lint: PATH arguments or --rules PATH")
			}
			return runLint(cmd.Context(), paths, o, s)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.rules, "rules", nil, "ModRule file or directory, as apply takes it (repeatable; same as a PATH argument)")
	f.StringArrayVarP(&o.files, "filename", "f", nil, "sample objects for the idempotency check: file or directory (repeatable)")
	f.StringVar(&o.clusterRules, "cluster-rules-namespace", modrule.DefaultClusterRulesNamespace, "namespace whose rules are cluster-wide")
	f.BoolVar(&o.strict, "strict", false, "exit 1 on warnings too")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	return cmd
}

// Finding is one problem lint found.
type Finding struct {
	Severity string `json:"severity"` // error or warning
	Code     string `json:"code"`
	Origin   string `json:"origin"` // file, document
	Rule     string `json:"rule,omitempty"`
	Field    string `json:"field,omitempty"`
	// Pos is the 1-based column in the field's text, or 0.
	Pos     int    `json:"column,omitempty"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

func (f Finding) String() string {
	var b strings.Builder
	b.WriteString(f.Origin)
	if f.Rule != "" {
		b.WriteString(": ModRule " + f.Rule)
	}
	if f.Field != "" {
		b.WriteString(": " + f.Field)
	}
	if f.Pos > 0 {
		fmt.Fprintf(&b, ": column %d", f.Pos)
	}
	fmt.Fprintf(&b, ": %s %s: %s", f.Severity, f.Code, f.Message)
	return b.String()
}

type lintReport struct {
	Findings []Finding `json:"findings"`
	Errors   int       `json:"errors"`
	Warnings int       `json:"warnings"`
}

// lintedRule is a compiled rule and where it came from.
type lintedRule struct {
	origin string
	rule   *modrule.Rule
}

func runLint(ctx context.Context, paths []string, o *lintOptions, s Streams) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.output != "text" && o.output != "json" {
		return usageError("--output must be text or json, not %q", o.output)
	}
	var rep lintReport
	add := func(f Finding) { rep.Findings = append(rep.Findings, f) }
	files, err := manifestFiles(paths)
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	var docs []source.Document
	for _, p := range files {
		// One file at a time, so that a broken file hides nothing else.
		d, err := source.ReadPaths([]string{p}, nil)
		if err != nil {
			msg := strings.TrimPrefix(err.Error(), source.ErrInvalidManifest.Error()+": ")
			add(Finding{Severity: "error", Code: codeUnreadable, Origin: p, Message: strings.TrimPrefix(msg, p+", "), Hint: "fix the YAML or JSON syntax"})
			continue
		}
		docs = append(docs, d...)
	}
	samples, err := source.ReadPaths(o.files, nil)
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}

	// Validation, exactly as rules are loaded everywhere: strict decoding,
	// then compilation.
	var linted []lintedRule
	seen := map[string]string{}
	for i := range docs {
		d := &docs[i]
		if !modrule.IsModRule(d) {
			continue
		}
		if prev, ok := seen[d.Key()]; ok {
			add(Finding{Severity: "error", Code: codeDuplicate, Origin: d.Origin, Rule: d.Key(),
				Message: "the rule is also defined in " + prev + ": apply and serve refuse to load both",
				Hint:    "give each rule its own name"})
			continue
		}
		seen[d.Key()] = d.Origin
		mr, err := modrule.Decode(d)
		if err != nil {
			add(Finding{Severity: "error", Code: codeUndecodable, Origin: d.Origin, Rule: d.Key(),
				Message: strings.TrimPrefix(err.Error(), "ModRule "+d.Key()+": "),
				Hint:    "check the field names and types against docs/modrule.md"})
			continue
		}
		r, err := modrule.Compiler{ClusterRulesNamespace: o.clusterRules}.Compile(mr)
		var ce *rules.CompileError
		if errors.As(err, &ce) {
			for _, fe := range ce.Errors {
				f := Finding{Severity: "error", Code: codeInvalid, Origin: d.Origin, Rule: r.Key, Field: fe.Field, Pos: fe.Pos + 1, Message: fe.Msg}
				if strings.HasSuffix(fe.Field, ".path") && strings.Contains(fe.Msg, "placeholder") {
					f.Code = codePlaceholder
					f.Hint = "only wildcards ([*]), filters ([?(...)]), slices, unions and .. capture keys: #0 is the first captured key"
				}
				add(f)
			}
			continue
		}
		linted = append(linted, lintedRule{origin: d.Origin, rule: r})
	}

	for _, lr := range linted {
		for _, f := range lintRule(ctx, lr, samples, o.clusterRules) {
			add(f)
		}
	}
	for _, f := range rep.Findings {
		if f.Severity == "error" {
			rep.Errors++
		} else {
			rep.Warnings++
		}
	}
	if err := printLint(s.Out, o.output, &rep); err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	if rep.Errors > 0 || (o.strict && rep.Warnings > 0) {
		return &ExitError{Code: 1}
	}
	return nil
}

// manifestFiles lists the files at the given paths: files as given, and
// the .yaml, .yml and .json files under directories, in lexical order.
func manifestFiles(paths []string) ([]string, error) {
	return suite.FindFiles(paths, func(path string) bool {
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			return true
		}
		return false
	})
}

func printLint(w io.Writer, format string, rep *lintReport) error {
	if format == "json" {
		if rep.Findings == nil {
			rep.Findings = []Finding{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(rep)
	}
	for _, f := range rep.Findings {
		fmt.Fprintln(w, f.String())
		if f.Hint != "" {
			fmt.Fprintln(w, "    hint: "+f.Hint)
		}
	}
	_, err := fmt.Fprintf(w, "%d errors, %d warnings\n", rep.Errors, rep.Warnings)
	return err
}

// lintRule runs the warnings' checks on one valid rule.
func lintRule(ctx context.Context, lr lintedRule, samples []source.Document, clusterNS string) []Finding {
	r := lr.rule
	var out []Finding
	warn := func(code, field, msg, hint string) {
		out = append(out, Finding{Severity: "warning", Code: code, Origin: lr.origin, Rule: r.Key, Field: field, Message: msg, Hint: hint})
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
	if kinds := r.Kinds(); kinds != nil && len(kinds) == 0 {
		warn(codeKindsNever, "spec.match", "the $.kind criteria can never hold together: the rule never fires", "keep one $.kind criterion, or use matchValues")
	}
	if r.Namespace == clusterNS && r.TargetNamespaces == nil {
		var namespaced []string
		for _, k := range r.Kinds() {
			if !IsClusterScoped(k) {
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
		if f, ok := checkIdempotent(ctx, lr, objs, clusterNS); ok {
			out = append(out, f)
		}
		out = append(out, lintValues(ctx, lr, objs, clusterNS)...)
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
func yieldsBoolean(ctx context.Context, c *modrule.Criterion, objs []sample) (string, bool) {
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
func sampleObjects(r *modrule.Rule, given []source.Document) []sample {
	var out []sample
	for i := range given {
		d := &given[i]
		if k := r.Kinds(); k == nil || slices.Contains(k, d.Kind()) {
			out = append(out, sample{origin: d.Origin, obj: d.Object})
		}
	}
	kinds := r.Kinds()
	if kinds == nil {
		kinds = []string{"Pod"}
	}
	for _, k := range kinds {
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
func pathOf(c *modrule.Criterion) []string {
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
func satisfy(obj map[string]any, c *modrule.Criterion) {
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
func checkIdempotent(ctx context.Context, lr lintedRule, objs []sample, clusterNS string) (Finding, bool) {
	r := lr.rule
	snap := engine.NewSnapshot([]engine.Rule{r})
	eng := engine.New(engine.Options{NoTrace: true})
	op := rules.Create
	if !r.Operations(op) {
		op = rules.Update
	}
	for _, s := range objs {
		a := newAdmission(s.obj, "default")
		a.ns = sampleNamespace(r, a, clusterNS)
		first, err := a.evaluate(ctx, eng, snap, op)
		if err == nil {
			for _, e := range first.Errors {
				if errors.Is(e, template.ErrLimit) {
					return Finding{Severity: "error", Code: codeTemplateLimit, Origin: lr.origin, Rule: r.Key, Field: e.Field,
						Message: fmt.Sprintf("applied to %s, %v", s.origin, e.Err),
						Hint:    "templates run under fixed bounds (docs/serve.md#limits): build smaller values, or loop less"}, true
				}
			}
		}
		if err != nil || !first.Changed() || len(first.Errors) > 0 {
			continue
		}
		again := a
		again.obj = first.Object.(map[string]any)
		second, err := again.evaluate(ctx, eng, snap, rules.Update)
		if err != nil || !second.Changed() {
			continue
		}
		ops := make([]string, len(second.Patch))
		for i, o := range second.Patch {
			ops[i] = o.String()
		}
		return Finding{Severity: "warning", Code: codeNotIdempotent, Origin: lr.origin, Rule: r.Key, Field: "spec.patch",
			Message: fmt.Sprintf("not idempotent: applied again to its own result on %s it changes the object again (%s)", s.origin, strings.Join(ops, "; ")),
			Hint:    "add a negated criterion that stops the rule once its change is there (e.g. select the added item with negate: true)"}, true
	}
	return Finding{}, false
}

// sampleNamespace puts a sample where the rule applies: a namespaced rule's
// own namespace, or a namespace its targetNamespaceRegex matches.
func sampleNamespace(r *modrule.Rule, a admission, clusterNS string) string {
	switch {
	case a.ns == "":
		return ""
	case r.Namespace != "" && r.Namespace != clusterNS:
		return r.Namespace
	case r.TargetNamespaces != nil && !r.TargetNamespaces.MatchString(a.ns):
		for _, ns := range []string{"default", "sample"} {
			if r.TargetNamespaces.MatchString(ns) {
				return ns
			}
		}
	}
	return a.ns
}
