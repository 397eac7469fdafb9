package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/modwright/modwright/internal/admissionpolicy"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/suite"
)

// The lint codes of the front end (every kind's are in package kinds, a
// kind's own in its adapter). They are stable: scripts and docs may refer
// to them.
const (
	codeUnreadable = "E001" // a file cannot be parsed
	codeDuplicate  = "E005" // two documents define the same rule
	codeNotARule   = "E007" // a document is not a rule of a served kind
	codeSkipped    = "W007" // the same, with --skip-unknown-kinds
	codeNoRules    = "E008" // the paths hold no rule at all
	codeRenamed    = "W009" // a rule of a kind written under its former name
	// W301, W302: admissionpolicy.CodeUnbound, CodeNoPolicy.
)

type lintOptions struct {
	rules        []string
	files        []string
	crds         []string
	clusterRules string
	strict       bool
	output       string
	skipUnknown  bool
}

func newLintCmd(s Streams) *cobra.Command {
	o := &lintOptions{}
	cmd := &cobra.Command{
		Use:   "lint [PATH]... [--rules PATH]... [-f SAMPLES]... [flags]",
		Short: "Validate rules as the webhook would, and warn about common mistakes",
		Long: `lint validates the rules in PATH and --rules PATH (files or directories,
recursive; .yaml, .yml, .json) exactly as the webhook and apply load them, reporting every
error with its file:line:column, rule and field, and warns about
rules that load but will not do what their author meant. Each finding has a
stable code and a hint:

  E001  a file cannot be parsed as YAML or JSON
  E002  a rule cannot be decoded (unknown field, wrong type), named by field
  E003  a rule is invalid (for example a bad select, regex, template, path
        or expression), named by field and column
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

ModwrightPolicies and ClusterModwrightPolicies have codes of their own (docs/policy.md#lint:
W201-W206, E201). With --crd, the self of their scoped CEL validations of
the CRDs' kinds is typed by the schema at the scope's place, as the API
server types a CRD rule's self there (and as apply --crd and the operator
type it when they run), and the expressions are type-checked against it:
  E201  a scoped validation does not type-check with self so typed (an
        undeclared or unescaped property, a wrong type)
  W206  a scoped validation that stays dynamically typed: it may see
        custom resources no --crd is given for, or the schema does not
        type its place

Validating and MutatingAdmissionPolicies and their bindings are checked as
the API server checks them when they are created (E003: an expression that
does not compile or has the wrong type, each with its field and column), and:
  W301  a policy no binding among the rules names: the API server never
        runs it
  W302  a binding whose policy is not among the rules

Rule templates run under the same bounds as in admission (docs/serve.md).
A document that is not a rule of a served kind nor one of Kubernetes'
admission policies is an error (E007; a warning, W007, with
--skip-unknown-kinds), and so are paths with no rule at all (E008; a
ConstraintTemplate counts: it is checked too). A rule
written under its kind's former name (Policy and ClusterPolicy, now
ModwrightPolicy and ClusterModwrightPolicy) loads, with a warning (W009).

Exit status: 0 when no rule has an error (warnings are printed), or, with
--strict, when there is no finding at all; 1 otherwise; 2 when a path cannot
be read or a --crd is not a valid CustomResourceDefinition.`,
		Example: `  modwright lint examples/rules
  modwright lint examples/rules -f examples/manifests --strict
  modwright lint examples/policies -o json
  modwright lint testdata/cli/lint/crd --crd testdata/crd/widgets.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths := append(args, o.rules...)
			if len(paths) == 0 {
				return usageError("give the rules to lint: PATH arguments or --rules PATH")
			}
			return runLint(cmd.Context(), paths, o, s)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.rules, "rules", nil, "rules: a file or directory, as apply takes it (repeatable; same as a PATH argument)")
	f.StringArrayVarP(&o.files, "filename", "f", nil, "sample objects for the idempotency check: file or directory (repeatable)")
	f.StringArrayVar(&o.crds, "crd", nil, "CustomResourceDefinitions (file or directory, repeatable): ModwrightPolicies' scoped validations of their kinds are type-checked with self typed by their schemas")
	f.StringVar(&o.clusterRules, "cluster-rules-namespace", defaultClusterRulesNamespace, "namespace whose rules are cluster-wide")
	f.BoolVar(&o.strict, "strict", false, "exit 1 on warnings too")
	f.BoolVar(&o.skipUnknown, "skip-unknown-kinds", false, "report documents that are not rules of a served kind as warnings (W007), not errors (E007)")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text, table or json")
	return cmd
}

// Finding is one problem lint found (package kinds).
type Finding = kinds.Finding

type lintReport struct {
	Findings []Finding `json:"findings"`
	Errors   int       `json:"errors"`
	Warnings int       `json:"warnings"`
}

// lintedRule is a compiled rule and where it came from.
type lintedRule struct {
	origin string
	rule   engine.Rule
}

func runLint(ctx context.Context, paths []string, o *lintOptions, s Streams) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.output != "text" && o.output != "table" && o.output != "json" {
		return usageError("--output must be text, table or json, not %q", o.output)
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
			add(Finding{Severity: kinds.SeverityError, Code: codeUnreadable, Origin: p, Message: strings.TrimPrefix(msg, p+", "), Hint: "fix the YAML or JSON syntax"})
			continue
		}
		docs = append(docs, d...)
	}
	samples, err := source.ReadPaths(o.files, nil)
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	var schemas []kinds.KindSchema
	if len(o.crds) > 0 {
		set, err := loadCRDs(ctx, o.crds, s)
		if err != nil {
			return err
		}
		for _, v := range set.Versions() {
			schemas = append(schemas, kinds.KindSchema{Group: v.GVK.Group, Version: v.GVK.Version, Kind: v.GVK.Kind, Typing: &v.Typing})
		}
	}

	reg, found, linted := compileForLint(docs, o)
	rep.Findings = append(rep.Findings, found...)

	rep.Findings = append(rep.Findings, lintPolicies(docs)...)
	// A definition (a ConstraintTemplate) is checked too: a directory of
	// templates alone is not "nothing".
	if !slices.ContainsFunc(docs, func(d source.Document) bool { return reg.Owns(&d) || admissionpolicy.Handles(d.Object) }) {
		add(Finding{Severity: kinds.SeverityError, Code: codeNoRules, Origin: strings.Join(paths, ", "),
			Message: "no rules: nothing would be checked", Hint: "rules are " + reg.Served() + ", or Kubernetes' admission policies"})
	}

	for _, lr := range linted {
		if l, ok := lr.rule.(kinds.Linter); ok {
			rep.Findings = append(rep.Findings, l.Lint(ctx, lr.origin, samples)...)
		}
		if l, ok := lr.rule.(kinds.SchemaLinter); ok {
			rep.Findings = append(rep.Findings, l.LintSchemas(lr.origin, schemas)...)
		}
	}
	positions(rep.Findings, docs)
	for _, f := range rep.Findings {
		if f.Severity == kinds.SeverityError {
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

// compileForLint validates docs exactly as rules are loaded everywhere:
// definitions first, then each document to the kind that owns it, strict
// decoding, then compilation. It returns the registry with the
// definitions, the findings and the rules that compiled.
func compileForLint(docs []source.Document, o *lintOptions) (reg *kinds.Registry, found []Finding, linted []lintedRule) {
	reg = newRegistry(o.clusterRules)
	// Definitions (ConstraintTemplates) first: their kinds' rules compile
	// against them.
	ptrs := make([]*kinds.Manifest, len(docs))
	for i := range docs {
		ptrs[i] = &docs[i]
	}
	reg, defErrs := reg.WithDefinitions(ptrs)
	seen := map[string]string{}
	for i := range docs {
		d := &docs[i]
		if reg.Defines(d) {
			if err := defErrs[i]; err != nil {
				found = append(found, kinds.CompileFindings(d.Kind(), d, err)...)
			}
			continue
		}
		k := reg.For(d)
		if k == nil {
			if !admissionpolicy.Handles(d.Object) {
				found = append(found, notARule(d, reg, o.skipUnknown))
			}
			continue
		}
		key := kinds.RuleKind(k, d) + " " + d.Key()
		if prev, ok := seen[key]; ok {
			found = append(found, Finding{Severity: kinds.SeverityError, Code: codeDuplicate, Origin: d.Origin, Kind: k.Name(), Rule: d.Key(),
				Message: "the rule is also defined in " + prev + ": apply and serve refuse to load both",
				Hint:    "give each rule its own name"})
			continue
		}
		seen[key] = d.Origin
		if dep := kinds.Deprecation(k); dep != "" {
			found = append(found, Finding{Severity: kinds.SeverityWarning, Code: codeRenamed, Origin: d.Origin, Kind: k.Name(), Rule: d.Key(), Field: "kind",
				Message: dep, Hint: "write kind: " + kinds.CurrentName(k)})
		}
		r, err := k.Compile(d)
		if a, ok := k.(kinds.Admitter); ok && err == nil {
			err = a.Check(d) // what the kind's rule webhook refuses too
		}
		if err != nil {
			name := k.Name()
			if _, ok := k.(kinds.GroupOwner); ok {
				name = d.Kind()
			}
			fs := kinds.CompileFindings(name, d, err)
			if cl, ok := k.(kinds.CompileLinter); ok {
				fs = cl.CompileFindings(d, err)
			}
			found = append(found, fs...)
			continue
		}
		linted = append(linted, lintedRule{origin: d.Origin, rule: r})
	}
	return reg, found, linted
}

// positions sets the file:line:column of each finding about one of docs:
// of its field (at its column), or of its document.
func positions(fs []Finding, docs []source.Document) {
	byOrigin := make(map[string]*source.Document, len(docs))
	for i := range docs {
		byOrigin[docs[i].Origin] = &docs[i]
	}
	var loc source.Locator // each document's text parsed once
	for i := range fs {
		f := &fs[i]
		d := byOrigin[f.Origin]
		if d == nil {
			continue
		}
		if line, col, ok := loc.Locate(d, f.Field, f.Pos-1); ok {
			f.Position = fmt.Sprintf("%s:%d:%d", d.Path, line, col)
		}
	}
}

// notARule is the finding of a document of no served kind: an error, or a
// warning with --skip-unknown-kinds.
func notARule(d *source.Document, reg *kinds.Registry, warn bool) Finding {
	f := Finding{Severity: kinds.SeverityError, Code: codeNotARule, Origin: d.Origin, Kind: d.Kind(), Rule: d.Key(),
		Message: strings.TrimPrefix(source.NotARule(d, reg), d.Origin+": "),
		Hint:    "remove it from the rule paths, or pass --skip-unknown-kinds to skip such documents"}
	if warn {
		f.Severity, f.Code, f.Hint = kinds.SeverityWarning, codeSkipped, ""
	}
	return f
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
	if format == "table" {
		rows := make([][]any, len(rep.Findings))
		for i, f := range rep.Findings {
			at := f.Position
			if at == "" {
				at = f.Origin
			}
			rows[i] = []any{at, f.Severity, f.Code, f.Kind + " " + f.Rule, f.Field, f.Message}
		}
		if err := printTable(w, []string{"Position", "Severity", "Code", "Rule", "Field", "Message"}, rows); err != nil {
			return err
		}
	} else {
		for _, f := range rep.Findings {
			fmt.Fprintln(w, f.String())
			if f.Hint != "" {
				fmt.Fprintln(w, "    hint: "+f.Hint)
			}
		}
	}
	_, err := fmt.Fprintf(w, "%s, %s\n", plural(rep.Errors, "error"), plural(rep.Warnings, "warning"))
	return err
}

// lintPolicies is what admissionpolicy.Lint finds among docs (Kubernetes'
// admission policies and bindings), as the front end's findings.
func lintPolicies(docs []source.Document) []Finding {
	in := make([]admissionpolicy.Doc, len(docs))
	for i, d := range docs {
		in[i] = admissionpolicy.Doc{Origin: d.Origin, Object: d.Object}
	}
	var out []Finding
	for _, f := range admissionpolicy.Lint(in) {
		sev := kinds.SeverityError
		if f.Warning {
			sev = kinds.SeverityWarning
		}
		out = append(out, Finding{Severity: sev, Code: f.Code, Origin: f.Origin, Kind: f.Kind, Rule: f.Name,
			Field: f.Field, Pos: f.Pos, Message: f.Message, Hint: f.Hint})
	}
	return out
}
