package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/runner"
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

--old gives the old objects of an UPDATE, as with apply; the title names the
old object of each. Admission warnings are shown and printed on stderr.

Patch rules run tier by tier; Reject rules run last, against the patched
object. The explanation is the engine's own trace of the evaluation, the
same evaluation apply and the webhook run.

-o json prints the same as one JSON document: {"objects": [...]}, each object
with its rules (scope, criteria, ops), errors, warnings, patch, result, denial
and old (where the old object came from).

Exit status: 0 when every object was explained (rejected ones included); 2
for invalid rules or input, as with apply.`,
		Example: `  modwright explain --rules examples/rules -f examples/manifests/web.yaml
  modwright explain --rules examples/rules -f examples/manifests -o json
  modwright explain --rules examples/rules -f - --operation UPDATE < examples/manifests/web.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runExplain(cmd.Context(), o, s)
		},
	}
	o.addFlags(cmd, "objects to explain", "text", "output format: text or json")
	_ = cmd.MarkFlagRequired("filename")
	cmd.Flags().StringVar(&o.color, "color", "auto", "colour the diff: auto (on a terminal), always or never")
	return cmd
}

// Explanation is the JSON form of explain's output for one object.
type Explanation struct {
	Origin    string `json:"origin"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Operation string `json:"operation"`
	// Old is where the old object of an UPDATE came from (--old); empty
	// without one.
	Old string `json:"old,omitempty"`
	// Schema is the --crd checks of the object, as the API server makes
	// them before and after the rules.
	Schema []string `json:"schema,omitempty"`
	// Mutating is what the MutatingAdmissionPolicies among the rules did:
	// they run before the rules (and, reinvoked, after them).
	Mutating []string `json:"mutatingPolicies,omitempty"`
	// Native is the verdict of the ValidatingAdmissionPolicies among the
	// rules, which run after them.
	Native []string      `json:"nativePolicies,omitempty"`
	Rules  []RuleExplain `json:"rules"`
	Errors []string      `json:"errors,omitempty"`
	// Warnings are the rules' admission warnings ("Kind rule: message"),
	// also printed on stderr.
	Warnings []string `json:"warnings,omitempty"`
	// AuditAnnotations are what rules added to the audit record ("Kind
	// rule: key=value").
	AuditAnnotations []string `json:"auditAnnotations,omitempty"`
	Allowed          bool     `json:"allowed"`
	// Denial is the denial text when a Reject rule matched.
	Denial string `json:"denial,omitempty"`
	// Patch turns the input into the result (RFC 6902).
	Patch  []patch.Operation `json:"patch"`
	Result any               `json:"result"`

	input any
}

// RuleExplain, CriterionExplain and OpExplain are what each kind's
// explainer fills in (package kinds).
type (
	RuleExplain      = kinds.RuleExplain
	CriterionExplain = kinds.CriterionExplain
	OpExplain        = kinds.OpExplain
)

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
	in, err := o.load(s)
	if err != nil {
		return err
	}
	chain := in.chain(&o.admissionFlags, true)
	var out []Explanation
	for i := range in.objs {
		d := &in.objs[i]
		a := in.admission(i, o.namespace)
		res, err := chain.Run(ctx, a.request(op))
		if err == nil {
			err = res.Refusal
		}
		if err != nil {
			return evaluationError(d, err)
		}
		printWarnings(s, d.Origin+": "+a.String(), res)
		ex := explainResult(in.snap, d.Origin, a, op, res)
		if in.olds != nil {
			ex.Old = in.olds[i].Origin
		}
		out = append(out, ex)
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

// explainResult explains what the chain made of a's admission: the rules
// (explain), then the steps around them; a step before the rules that
// refused the object leaves them not evaluated.
func explainResult(snap *engine.Snapshot, origin string, a admission, op rules.Operation, res *runner.Result) Explanation {
	dec := res.Decision
	if res.Stage == runner.StageInvalid || res.Stage == runner.StageMutatingPolicies {
		dec = &engine.Decision{Object: a.obj} // the rules did not run
	}
	ex := explain(snap, origin, a, op, dec)
	var refusal error
	if !res.Allowed {
		refusal = errors.New(res.Denial)
		ex.Allowed, ex.Denial = false, res.DenialText()
	}
	if res.Checked.Schema {
		ex.Schema = append(ex.Schema, "before the rules: "+verdict(refusal, res.Stage == runner.StageInvalid))
	}
	if len(res.Pruned) > 0 {
		ex.Schema = append(ex.Schema, "the rules added fields the schema does not know (pruned): "+strings.Join(res.Pruned, ", "))
	}
	for _, w := range res.SchemaWarnings {
		ex.Schema = append(ex.Schema, "warning: "+w)
	}
	if res.Checked.Schema && res.Stage != runner.StageInvalid && dec.Allowed() || res.Stage == runner.StageInvalidAfter {
		ex.Schema = append(ex.Schema, "after the rules: "+verdict(refusal, res.Stage == runner.StageInvalidAfter))
	}
	switch {
	case res.Stage == runner.StageMutatingPolicies:
		ex.Mutating = append(ex.Mutating, "refused: "+res.Denial)
	case res.Checked.MutatingPolicies:
		ex.Mutating = append(ex.Mutating, "evaluated before the rules (and again after them where reinvocationPolicy is IfNeeded); their changes are in the result")
	}
	if res.Checked.ValidatingPolicies {
		ex.Native = append(ex.Native, verdict(refusal, res.Stage == runner.StageValidatingPolicies))
	}
	if dec != res.Decision {
		note := "a mutating admission policy refused the object first"
		if res.Stage == runner.StageInvalid {
			note = "the API server refused the object first (invalid for its CRD)"
		}
		for i := range ex.Rules {
			if ex.Rules[i].InScope {
				ex.Rules[i].Outcome, ex.Rules[i].Note = "not evaluated", note
			}
		}
	}
	if res.Allowed {
		ex.Result, ex.Patch = res.Object, res.Patch
		if ex.Patch == nil {
			ex.Patch = []patch.Operation{}
		}
	}
	return ex
}

// verdict is a check's outcome: invalid (with the refusal) when the check
// refused the object.
func verdict(refusal error, refused bool) string {
	if refused {
		return "invalid: " + refusal.Error()
	}
	return "valid"
}

// explain turns a decision's trace into an explanation covering every rule
// of the snapshot, in evaluation order; each rule's kind explains its own
// part (kinds.Explainer).
func explain(snap *engine.Snapshot, origin string, a admission, op rules.Operation, dec *engine.Decision) Explanation {
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
	for _, w := range dec.Warnings {
		ex.Warnings = append(ex.Warnings, runner.WarningText(w))
	}
	for _, an := range dec.AuditAnnotations {
		ex.AuditAnnotations = append(ex.AuditAnnotations, an.Kind+" "+an.Rule+": "+an.Key+"="+an.Value)
	}
	type id struct{ kind, key string }
	traces := map[id]*engine.RuleTrace{}
	for i := range dec.Trace {
		traces[id{dec.Trace[i].Kind, dec.Trace[i].Rule}] = &dec.Trace[i]
	}
	inScope := map[engine.Rule]bool{}
	for _, r := range snap.Candidates(a.ns, op, a.kind, nil) {
		inScope[r] = true
	}
	all := slices.Clone(snap.Rules())
	slices.SortStableFunc(all, engine.Less)
	for _, r := range all {
		info := r.Info()
		re := RuleExplain{Rule: info.Key, Type: info.Phase.String(), Tier: info.Tier, InScope: inScope[r]}
		var tr *engine.RuleTrace
		if re.InScope {
			tr = traces[id{info.Kind, info.Key}]
		}
		if e, ok := r.(kinds.Explainer); ok {
			re.Scope = kinds.ScopeReason(r, e, a.ns, a.kind, op, re.InScope)
			e.Explain(&re, tr, dec)
		} else if tr != nil {
			re.Scope = "in scope"
			re.Outcome, re.Reason = string(tr.Outcome), tr.Reason
		}
		if !re.InScope {
			re.Note = ""
		}
		ex.Rules = append(ex.Rules, re)
	}
	return ex
}

// printExplanation writes the text form.
func printExplanation(w io.Writer, ex *Explanation, color bool) {
	title := ex.Kind + " " + ex.Name
	if ex.Namespace != "" {
		title = ex.Kind + " " + ex.Namespace + "/" + ex.Name
	}
	if ex.Old != "" {
		fmt.Fprintf(w, "=== %s (%s), %s (old object: %s)\n", title, ex.Origin, ex.Operation, ex.Old)
	} else {
		fmt.Fprintf(w, "=== %s (%s), %s\n", title, ex.Origin, ex.Operation)
	}
	if len(ex.Rules) == 0 {
		fmt.Fprintln(w, "no rules")
	}
	for i := range ex.Rules {
		printRule(w, &ex.Rules[i])
	}
	for _, e := range ex.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
	for _, c := range ex.Schema {
		fmt.Fprintf(w, "schema: %s\n", c)
	}
	for _, c := range ex.Mutating {
		fmt.Fprintf(w, "mutating admission policies: %s\n", c)
	}
	for _, c := range ex.Native {
		fmt.Fprintf(w, "validating admission policies: %s\n", c)
	}
	for _, e := range ex.Warnings {
		fmt.Fprintf(w, "warning: %s\n", e)
	}
	for _, an := range ex.AuditAnnotations {
		fmt.Fprintf(w, "audit: %s\n", an)
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
	if r.Note != "" {
		outcome += " (" + r.Note + ")"
	}
	fmt.Fprintf(w, "%s: %s\n", head, outcome)
	fmt.Fprintf(w, "  %s\n", r.Scope)
	for _, c := range r.Criteria {
		if c.Language != "" {
			fmt.Fprintf(w, "  %s (%s): %s\n", c.Field, c.Language, strings.ReplaceAll(c.Select, "\n", "\n      "))
			if c.Error != "" {
				fmt.Fprintf(w, "    error: %s\n", c.Error)
			} else if len(c.Values) > 0 {
				fmt.Fprintf(w, "    = %s\n", valueText(c.Values[0]))
			}
			continue
		}
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
		if c.At >= 0 && c.At < len(c.Tested) {
			why += fmt.Sprintf(" (value %d: %s)", c.At+1, valueText(c.Tested[c.At]))
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
