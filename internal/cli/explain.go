package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

type explainOptions struct {
	applyOptions
	color string
}

func newExplainCmd(s Streams) *cobra.Command {
	o := &explainOptions{}
	cmd := &cobra.Command{
		Use:   "explain --rules PATH [--rules PATH]... -f PATH|- [-f PATH]... [flags]",
		Short: "Show how every rule was evaluated against each object, and why",
		Long: `explain takes the same inputs as apply and shows, for every object, how the
engine evaluated it:

  - every rule, in evaluation order (tier, then namespace, then name), and
    whether it was in scope for the object: its namespace (or, for rules in
    the cluster-rules namespace, targetNamespaceRegex), its
    admissionOperations, and the kinds its $.kind criteria pin it to;
  - for a rule in scope, each criterion: its select, matcher and negate, the
    values select produced, and why the criterion held or failed (evaluation
    of a rule stops at the first criterion that fails);
  - the operations each matching Patch rule produced: path, the values of
    the #N placeholders, and the rendered value as YAML;
  - errors (a rule that failed to apply is skipped as a whole);
  - a unified diff from the input to the result (coloured on a terminal, or
    with --color always), and the denial text when a Reject rule matched.

Patch rules run tier by tier; Reject rules run last, against the patched
object. The explanation is the engine's own trace of the evaluation, the
same evaluation apply and the webhook run.

-o json prints the same as one JSON document: {"objects": [...]}, each object
with its rules (scope, criteria, ops), errors, patch, result and denial.

Exit status: 0 when every object was explained (rejected ones included); 2
for invalid rules or input, as with apply.`,
		Example: `  modwright explain --rules examples/rules -f examples/manifests/web.yaml
  modwright explain --rules examples/rules -f examples/manifests -o json
  kubectl get deploy web -o yaml | modwright explain --rules rules/ -f - --operation UPDATE`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runExplain(cmd.Context(), o, s)
		},
	}
	o.addFlags(cmd, "objects to explain", "text", "output format: text or json")
	cmd.Flags().StringVar(&o.color, "color", "auto", "colour the diff: auto (on a terminal), always or never")
	return cmd
}

// Explanation is the JSON form of explain's output for one object.
type Explanation struct {
	Origin    string        `json:"origin"`
	Kind      string        `json:"kind"`
	Namespace string        `json:"namespace,omitempty"`
	Name      string        `json:"name"`
	Operation string        `json:"operation"`
	Rules     []RuleExplain `json:"rules"`
	Errors    []string      `json:"errors,omitempty"`
	Allowed   bool          `json:"allowed"`
	// Denial is the denial text when a Reject rule matched.
	Denial string `json:"denial,omitempty"`
	// Patch turns the input into the result (RFC 6902).
	Patch  []patch.Operation `json:"patch"`
	Result any               `json:"result"`

	input any
}

// RuleExplain is one rule's part of an explanation.
type RuleExplain struct {
	Rule    string `json:"rule"`
	Type    string `json:"type"`
	Tier    int    `json:"tier"`
	InScope bool   `json:"inScope"`
	// Scope says why the rule is, or is not, in scope.
	Scope string `json:"scope"`
	// Outcome is matched, not-matched, failed or skipped; empty out of scope.
	Outcome  string             `json:"outcome,omitempty"`
	Reason   string             `json:"reason,omitempty"`
	Criteria []CriterionExplain `json:"criteria,omitempty"`
	// NotEvaluated names the criteria after the first that failed.
	NotEvaluated []string    `json:"notEvaluated,omitempty"`
	Ops          []OpExplain `json:"ops,omitempty"`
	// Rejection is the rendered rejectMessage of a matching Reject rule.
	Rejection *string `json:"rejection,omitempty"`
	// LastAppliedError is set when the ops could not be mirrored into the
	// last-applied-configuration annotation.
	LastAppliedError string `json:"lastAppliedError,omitempty"`
}

// CriterionExplain is one evaluated criterion.
type CriterionExplain struct {
	Field   string `json:"field"`
	Select  string `json:"select"`
	Matcher string `json:"matcher,omitempty"`
	Negate  bool   `json:"negate,omitempty"`
	Values  []any  `json:"values"`
	Held    bool   `json:"held"`
	// Why says what decided the criterion (before negate).
	Why string `json:"why"`
	// At is the index of the deciding value among those tested, or -1.
	At    int    `json:"at"`
	Error string `json:"error,omitempty"`
}

// OpExplain is one operation a Patch rule produced.
type OpExplain struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
	Field string `json:"field"`
	// Keys are the #N placeholder values (the keys select captured).
	Keys []any `json:"keys,omitempty"`
}

func runExplain(ctx context.Context, o *explainOptions, s Streams) error {
	if ctx == nil {
		ctx = context.Background()
	}
	op, err := o.parse("text")
	if err != nil {
		return err
	}
	var color bool
	switch o.color {
	case "auto":
		color = isTerminal(s.Out)
	case "always":
		color = true
	case "never":
	default:
		return usageError("--color must be auto, always or never, not %q", o.color)
	}
	snap, objs, resolver, err := o.load(s)
	if err != nil {
		return err
	}
	eng := engine.New(engine.Options{Objects: resolver})
	var out []Explanation
	for i := range objs {
		d := &objs[i]
		a := newAdmission(d.Object, o.namespace)
		dec, err := a.evaluate(ctx, eng, snap, op)
		if err != nil {
			return evaluationError(d, err)
		}
		out = append(out, explain(snap, d.Origin, a, op, dec))
	}
	if o.output == "json" {
		if out == nil {
			out = []Explanation{}
		}
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(map[string]any{"objects": out}); err != nil {
			return &ExitError{Code: 2, Err: err}
		}
		return nil
	}
	for i := range out {
		if i > 0 {
			fmt.Fprintln(s.Out)
		}
		printExplanation(s.Out, &out[i], color)
	}
	return nil
}

// explain turns a decision's trace into an explanation covering every rule
// of the snapshot, in evaluation order.
func explain(snap *rules.Snapshot, origin string, a admission, op rules.Operation, dec *engine.Decision) Explanation {
	ex := Explanation{
		Origin: origin, Kind: a.kind, Namespace: a.ns, Name: a.name, Operation: string(op),
		Allowed: dec.Allowed(), Patch: dec.Patch, Result: dec.Object, input: a.obj,
	}
	if !dec.Allowed() {
		ex.Denial = dec.DenialMessage()
	}
	if ex.Patch == nil {
		ex.Patch = []patch.Operation{}
	}
	for _, e := range dec.Errors {
		ex.Errors = append(ex.Errors, e.Error())
	}
	traces := map[string]*engine.RuleTrace{}
	for i := range dec.Trace {
		traces[dec.Trace[i].Rule] = &dec.Trace[i]
	}
	rejections := map[string]engine.Rejection{}
	for _, r := range dec.Rejections {
		rejections[r.Rule] = r
	}
	inScope := map[*rules.Rule]bool{}
	for _, r := range snap.Candidates(a.ns, op, a.kind, nil) {
		inScope[r] = true
	}
	all := slices.Clone(snap.Rules())
	slices.SortStableFunc(all, rules.Less)
	for _, r := range all {
		re := RuleExplain{Rule: r.Key, Type: string(r.Type), Tier: r.Tier, InScope: inScope[r]}
		re.Scope = scopeReason(snap, r, a, op, re.InScope)
		if tr := traces[r.Key]; tr != nil && re.InScope {
			re.Outcome, re.Reason = string(tr.Outcome), tr.Reason
			for _, ct := range tr.Criteria {
				re.Criteria = append(re.Criteria, explainCriterion(ct))
			}
			if tr.Outcome == engine.NotMatched {
				for _, c := range r.Criteria[len(tr.Criteria):] {
					re.NotEvaluated = append(re.NotEvaluated, c.Field)
				}
			}
			for i, o := range tr.Ops {
				oe := OpExplain{Op: string(o.Op), Path: o.Path.String(), Value: o.Value}
				if i < len(tr.OpSources) {
					oe.Field, oe.Keys = tr.OpSources[i].Field, tr.OpSources[i].Keys
				}
				re.Ops = append(re.Ops, oe)
			}
			if rej, ok := rejections[r.Key]; ok {
				msg := rej.Message
				if rej.MessageError != nil {
					msg = "(rejectMessage failed: " + rej.MessageError.Error() + ")"
				}
				re.Rejection = &msg
			}
			if tr.LastAppliedErr != nil {
				re.LastAppliedError = tr.LastAppliedErr.Error()
			}
		}
		ex.Rules = append(ex.Rules, re)
	}
	return ex
}

func explainCriterion(ct engine.CriterionTrace) CriterionExplain {
	c := ct.Criterion
	ce := CriterionExplain{Field: c.Field, Negate: c.Negate, Values: ct.Values, Held: ct.Held, Why: ct.Verdict.String(), At: ct.At}
	if ce.Values == nil {
		ce.Values = []any{}
	}
	if c.Select != nil {
		ce.Select = c.Select.Source()
	}
	switch {
	case c.Value != nil:
		ce.Matcher = "matchValue " + strconv.Quote(*c.Value)
	case len(c.Values) > 0:
		q := make([]string, len(c.Values))
		for i, v := range c.Values {
			q[i] = strconv.Quote(v)
		}
		ce.Matcher = "matchValues [" + strings.Join(q, ", ") + "]"
	case c.Regex != nil:
		ce.Matcher = "matchRegex /" + c.Regex.String() + "/"
	}
	if ce.Matcher != "" && c.All {
		ce.Matcher += " (matchFor: All)"
	}
	if ct.Err != nil {
		ce.Error = ct.Err.Error()
	}
	return ce
}

// scopeReason says why a rule is or is not a candidate for the object. In
// scope or not is the snapshot's answer (Candidates); this only names the
// reason.
func scopeReason(snap *rules.Snapshot, r *rules.Rule, a admission, op rules.Operation, in bool) string {
	clusterNS := snap.ClusterRulesNamespace()
	var where string
	switch {
	case r.Namespace == "":
		where = "rule without namespace: applies to every object"
	case r.Namespace == clusterNS && r.TargetNamespaces == nil:
		if a.ns != "" {
			return fmt.Sprintf("out of scope: a rule in the cluster-rules namespace %s without targetNamespaceRegex applies only to cluster-scoped objects", clusterNS)
		}
		where = "cluster rule: applies to cluster-scoped objects"
	case r.Namespace == clusterNS:
		target := a.ns
		if target == "" {
			target = "(cluster-scoped)"
		}
		if !r.TargetNamespaces.MatchString(a.ns) {
			return fmt.Sprintf("out of scope: targetNamespaceRegex /%s/ does not match namespace %s", r.TargetNamespaces, target)
		}
		where = fmt.Sprintf("cluster rule: targetNamespaceRegex /%s/ matches namespace %s", r.TargetNamespaces, target)
	case a.ns == "":
		return fmt.Sprintf("out of scope: a rule in namespace %s applies only to objects in %s, not to cluster-scoped ones", r.Namespace, r.Namespace)
	case r.Namespace != a.ns:
		return fmt.Sprintf("out of scope: a rule in namespace %s applies only to objects in %s, not %s", r.Namespace, r.Namespace, a.ns)
	default:
		where = "rule in the object's namespace " + r.Namespace
	}
	ops := r.Source.Spec.AdmissionOperations
	if !r.Operations(op) {
		return fmt.Sprintf("out of scope: admissionOperations %v do not include %s", ops, op)
	}
	kinds := r.Kinds()
	if kinds != nil && !slices.Contains(kinds, a.kind) {
		if len(kinds) == 0 {
			return "out of scope: its $.kind criteria can never hold together"
		}
		return fmt.Sprintf("out of scope: its $.kind criteria pin it to %s", strings.Join(kinds, ", "))
	}
	if !in {
		return "out of scope"
	}
	kindText := "any kind"
	if kinds != nil {
		kindText = "kind " + a.kind
	}
	return fmt.Sprintf("in scope: %s; %s; %s", where, op, kindText)
}

// printExplanation writes the text form.
func printExplanation(w io.Writer, ex *Explanation, color bool) {
	title := ex.Kind + " " + ex.Name
	if ex.Namespace != "" {
		title = ex.Kind + " " + ex.Namespace + "/" + ex.Name
	}
	fmt.Fprintf(w, "=== %s (%s), %s\n", title, ex.Origin, ex.Operation)
	if len(ex.Rules) == 0 {
		fmt.Fprintln(w, "no rules")
	}
	for i := range ex.Rules {
		printRule(w, &ex.Rules[i])
	}
	for _, e := range ex.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
	if d := unifiedDiff(title+" (input)", title+" (result)", toYAML(ex.input), toYAML(ex.Result), color); d != "" {
		fmt.Fprint(w, d)
	} else {
		fmt.Fprintln(w, "unchanged")
	}
	if ex.Allowed {
		fmt.Fprintln(w, "admitted")
	} else {
		fmt.Fprintln(w, "rejected: "+ex.Denial)
	}
}

func printRule(w io.Writer, r *RuleExplain) {
	head := fmt.Sprintf("rule %s (%s, tier %d)", r.Rule, r.Type, r.Tier)
	if !r.InScope {
		fmt.Fprintf(w, "%s: %s\n", head, r.Scope)
		return
	}
	outcome := r.Outcome
	if r.Reason != "" {
		outcome += ": " + r.Reason
	}
	if r.Type == "Reject" {
		outcome += " (Reject rules run last, against the patched object)"
	}
	fmt.Fprintf(w, "%s: %s\n", head, outcome)
	fmt.Fprintf(w, "  %s\n", r.Scope)
	for _, c := range r.Criteria {
		line := fmt.Sprintf("  %s select %s", c.Field, c.Select)
		if c.Matcher != "" {
			line += " " + c.Matcher
		}
		if c.Negate {
			line += " negate"
		}
		fmt.Fprintln(w, line)
		fmt.Fprintf(w, "    values: %s\n", valuesText(c.Values))
		verdict := "failed"
		if c.Held {
			verdict = "held"
		}
		why := c.Why
		if tested := testedValues(c.Values); c.At >= 0 && c.At < len(tested) && c.Why != engine.VerdictBoolean.String() {
			why += fmt.Sprintf(" (value %d: %s)", c.At+1, valueText(tested[c.At]))
		}
		if c.Error != "" {
			why += ": " + c.Error
		}
		if c.Negate {
			why += "; negated"
		}
		fmt.Fprintf(w, "    %s: %s\n", verdict, why)
	}
	if len(r.NotEvaluated) > 0 {
		fmt.Fprintf(w, "  not evaluated: %s\n", strings.Join(r.NotEvaluated, ", "))
	}
	for _, op := range r.Ops {
		line := fmt.Sprintf("  op %s %s (%s", op.Op, op.Path, op.Field)
		for i, k := range op.Keys {
			line += fmt.Sprintf(", #%d=%s", i, valueText(k))
		}
		fmt.Fprintln(w, line+")")
		if op.Op != string(patch.Remove) {
			for _, l := range splitLines(toYAML(op.Value)) {
				fmt.Fprintln(w, "      "+l)
			}
		}
	}
	if r.Rejection != nil {
		fmt.Fprintf(w, "  rejectMessage: %s\n", *r.Rejection)
	}
	if r.LastAppliedError != "" {
		fmt.Fprintf(w, "  last-applied-configuration not updated: %s\n", r.LastAppliedError)
	}
}

// testedValues are the values a matcher tests: the elements of a single
// array, as the engine does.
func testedValues(vals []any) []any {
	if len(vals) == 1 {
		if arr, ok := vals[0].([]any); ok {
			return arr
		}
	}
	return vals
}

// maxValueText bounds how much of one selected value the text form shows.
const maxValueText = 160

func valuesText(vals []any) string {
	if len(vals) == 0 {
		return "(none)"
	}
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = valueText(v)
	}
	return strings.Join(parts, ", ")
}

func valueText(v any) string {
	b, err := value.Encode(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > maxValueText {
		return string(b[:maxValueText]) + "…"
	}
	return string(b)
}
