package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/printers"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/admissionpolicy"
	"github.com/modwright/modwright/internal/crdschema"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/runner"
	"github.com/modwright/modwright/internal/source"
)

// admissionFlags are the flags of every command that admits objects
// offline (apply, explain, krm): the operation and where objects are.
type admissionFlags struct {
	operation    string
	namespace    string
	clusterRules string
	// registry gives the kinds served (nil: newRegistry); tests set it to
	// add kinds of their own.
	registry registryFunc
	// webhook runs the rules through the dragnet webhook handler instead
	// of the engine (the corpus's second pass; no flag).
	webhook bool
}

// registryFunc builds the registry of the kinds served for a
// cluster-rules namespace.
type registryFunc func(clusterNS string) *kinds.Registry

// kinds is the registry the command loads rules with.
func (f registryFunc) kinds(clusterNS string) *kinds.Registry {
	if f == nil {
		return newRegistry(clusterNS)
	}
	return f(clusterNS)
}

// add declares them; what names the objects in the --namespace usage.
func (a *admissionFlags) add(f *pflag.FlagSet, what string) {
	f.StringVar(&a.operation, "operation", "CREATE", "admission operation: CREATE, UPDATE, DELETE or CONNECT (-f: the connection's options, PodExecOptions...)")
	f.StringVarP(&a.namespace, "namespace", "n", "default", "namespace assumed for namespaced "+what+" that carry none")
	f.StringVar(&a.clusterRules, "cluster-rules-namespace", defaultClusterRulesNamespace, "namespace whose rules are cluster-wide")
}

type applyOptions struct {
	// exceptions are files of Kyverno PolicyExceptions.
	exceptions []string
	rules      []string
	files      []string
	contexts   []string
	packs      []string
	crds       []string
	userInfo   string
	old        string
	// payloads are JSON payloads (--json): documents that are no
	// Kubernetes objects, for Kyverno's ValidatingPolicies of
	// evaluation.mode JSON.
	payloads []string
	admissionFlags
	output      string
	skipUnknown bool
	quiet       bool
}

func newApplyCmd(s Streams) *cobra.Command { return newApplyCmdFor(s, &applyOptions{}) }

// newApplyCmdFor is apply with its options in o (tests set what no flag
// does: the registry, the webhook driver).
func newApplyCmdFor(s Streams, o *applyOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "apply --rules PATH [--rules PATH]... -f PATH|- [-f PATH]... [flags]",
		Short: "Run rules over manifests offline and print the admitted objects",
		Long: `apply evaluates rules against objects as the admission webhook would, and prints
every admitted object, changed only by the rules, in input order. Rules are
KubeMod's ModRules, modwright's ModwrightPolicies and ClusterModwrightPolicies,
kinitiras' policies and Kubernetes' admission policies with their bindings.

Rules (--rules) and objects (-f) are files or directories (recursive; .yaml, .yml,
.json; several documents per file; kind: List). "-f -" reads standard input, so
apply works as a Helm post-renderer:

  helm install app ./chart --post-renderer modwright --post-renderer-args apply \
    --post-renderer-args --rules=./rules --post-renderer-args -f --post-renderer-args -

A ModRule without metadata.namespace applies to every object; ModRules in the
cluster-rules namespace apply to cluster-scoped objects, and to the namespaces
their targetNamespaceRegex matches. --context gives the objects rules read
(Namespaces and Nodes for ModRules' syntheticRefs, ConfigMaps and recorded API
responses for Policies' context); they are not printed.

A document in --rules that is not a rule of a served kind (nor one of
Kubernetes' admission policies) is an error naming its apiVersion and kind, and
so are --rules that hold no rule at all; --skip-unknown-kinds makes the former
a warning.

--operation UPDATE admits the objects as updates; --old gives their old objects
(a file or -): each object is paired with the old object of the same apiVersion,
kind, namespace and name, and one missing on either side is an error. --old is
an error with CREATE and refused with DELETE (-f is then the old object).
Without --old an UPDATE carries no old object. What rules warn about is printed
on stderr and does not change the exit status.

apply ends with a summary line on stderr ("apply: 5000 objects read: 120
patched, 3 rejected, 4877 admitted unchanged; 7 warnings; 9 of 40 rules
patched"), and shows a progress line on a terminal while a run is long; -q
silences both.

--crd gives CustomResourceDefinitions: objects of their kinds are decoded and
validated as the kube-apiserver does, before the rules (an invalid object is
refused: "invalid: ...") and after them (a rule's invalid result is refused:
"invalid after the rules: ..."); see docs/cel.md.

Exit status: 0 when every object was admitted; 1 when any was rejected, as
the webhook would refuse it (a rule rejected it, a rule failed under
failurePolicy Fail, or a Reject or validation rule could not be decided;
each rejection is printed on stderr; admitted objects are still printed);
2 for invalid rules or input, a rule reading data the context does not give
included (stderr names file:line:column, the rule and the field;
nothing is printed on stdout).`,
		Example: `  modwright apply --rules examples/rules -f examples/manifests
  modwright apply --rules examples/rules -f examples/manifests/web.yaml -n prod -o json
  modwright apply --rules examples/policies -f testdata/cli/policy/web-v2.yaml --operation UPDATE --old testdata/cli/policy/web-v1.yaml
  helm template web testdata/cli/helm/chart | modwright apply --rules examples/rules -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runApply(cmd.Context(), o, s)
		},
	}
	o.addFlags(cmd, "objects to admit", "yaml", "output format: yaml, json, or name (kind.group/name of each admitted object, as kubectl prints it)")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "print no summary line and no progress on stderr (warnings and refusals still)")
	cmd.Flags().StringArrayVar(&o.payloads, "json", nil, "a JSON payload (a JSON or YAML file of one document that need not be a Kubernetes object: a Terraform plan, a parsed Dockerfile) checked by Kyverno's ValidatingPolicies of evaluation.mode JSON, as kyverno apply's --json; checked, not printed (repeatable)")
	cmd.MarkFlagsOneRequired("filename", "json")
	return cmd
}

// addFlags declares the flags apply and explain share: the rules, the
// objects (described by what), the context, the admission and the output.
func (o *applyOptions) addFlags(cmd *cobra.Command, what, output, outputUsage string) {
	f := cmd.Flags()
	f.StringArrayVar(&o.rules, "rules", nil, "rules: a file, a directory or - (repeatable)")
	f.BoolVar(&o.skipUnknown, "skip-unknown-kinds", false, "warn about documents in --rules that are not rules of a served kind, instead of failing (exit 2)")
	f.StringArrayVarP(&o.files, "filename", "f", nil, what+": file, directory or - for stdin (repeatable)")
	f.StringArrayVar(&o.contexts, "context", nil, "objects the rules read (Namespaces and Nodes for syntheticRefs, ConfigMaps for ModwrightPolicies' context) and recorded APICallResponse documents (repeatable)")
	f.StringArrayVar(&o.packs, "rule-pack", nil, "a Rego rule pack (a directory or oci://REF) whose edges join the context objects' graph (syntheticRefs.edges; repeatable)")
	f.StringArrayVar(&o.crds, "crd", nil, "CustomResourceDefinitions (a file or directory; repeatable): objects of their kinds are decoded and validated as the kube-apiserver does, before and after the rules (docs/cel.md)")
	f.StringVar(&o.userInfo, "user-info", "", "the requester: a UserInfo document (userInfo: {username, groups}, roles, clusterRoles), Kyverno CLI's format")
	f.StringArrayVar(&o.exceptions, "exception", nil, "Kyverno PolicyExceptions (kyverno.io/v2 for ClusterPolicies and Policies, policies.kyverno.io/v1 for the CEL policies) the Kyverno policies honour: a file or directory (repeatable), as kyverno apply's --exception")
	o.admissionFlags.add(f, "objects")
	f.StringVar(&o.old, "old", "", oldUsage)
	f.StringVarP(&o.output, "output", "o", output, outputUsage)
	_ = cmd.MarkFlagRequired("rules")
}

// parse checks --operation, --old, then --output: one of formats or json.
func (o *applyOptions) parse(formats ...string) (rules.Operation, error) {
	op, err := parseOperation(o.operation)
	if err != nil {
		return "", err
	}
	if err := checkOld(o.old, op); err != nil {
		return "", err
	}
	if !slices.Contains(formats, o.output) && o.output != "json" {
		return "", usageError("--output must be %s or json, not %q", strings.Join(formats, ", "), o.output)
	}
	return op, nil
}

// inputs is what apply and explain read.
type inputs struct {
	snap *engine.Snapshot
	objs []source.Document
	// olds are the old objects of an UPDATE with --old, parallel to objs;
	// nil without --old.
	olds     []*source.Document
	resolver engine.ObjectReader  // nil without --context
	crds     *crdschema.Set       // nil without --crd
	policies *admissionpolicy.Set // the Validating and MutatingAdmissionPolicies among the rules
}

// admission is the admission of objs[i], with its old object.
func (in *inputs) admission(i int, defaultNS string) admission {
	a := newAdmission(in.objs[i].Object, defaultNS)
	a.user = userOf(in.resolver)
	if in.olds != nil {
		a.old = in.olds[i].Object
	}
	return a
}

// chain is the API server's admission chain around the rules
// (runner.Chain) for the objects of in; traced keeps the engine's trace
// (explain). Without webhook the rules run in the engine (runner.Engine),
// with it through the dragnet webhook handler (runner.Webhook: the corpus
// proves both alike).
func (in *inputs) chain(f *admissionFlags, traced bool) *runner.Chain {
	opts := engineOptions(in.resolver, in.crds)
	opts.NoTrace = !traced
	var drv runner.Driver = runner.NewEngineOptions(in.snap, opts)
	if f.webhook {
		drv = runner.NewWebhookOptions(in.snap, opts)
	}
	return runner.NewChain(drv, runner.ChainOptions{CRDs: in.crds, Policies: in.policies,
		Objects: contextObjects(in.resolver), User: userOf(in.resolver), DefaultNamespace: f.namespace})
}

// engineOptions are a command's engine options: the context's readers
// (runner.Options) and the --crd schemas, which type a Policy's scoped
// validations of their kinds (nil: none).
func engineOptions(resolver engine.ObjectReader, crds *crdschema.Set) engine.Options {
	o := runner.Options(resolver)
	if crds != nil {
		o.Schemas = crds
	}
	return o
}

// load reads what apply and explain take, in this order: the rules
// (compiled), the objects, the old objects (--old, paired with the
// objects) and the context objects (as a resolver, nil when there are
// none). Standard input may be named once.
func (o *applyOptions) load(s Streams) (*inputs, error) {
	var old []string
	if o.old != "" {
		old = []string{o.old}
	}
	contexts := o.contexts
	if o.userInfo != "" {
		contexts = append(slices.Clone(contexts), o.userInfo)
	}
	if err := checkStdin(o.rules, o.files, old, append(append(slices.Clone(contexts), o.crds...), o.exceptions...)); err != nil {
		return nil, err
	}
	reg := o.registry.kinds(o.clusterRules)
	if len(o.exceptions) > 0 {
		exs, err := compileExceptions(o.exceptions, s.In)
		if err != nil {
			return nil, &ExitError{Code: 2, Err: fmt.Errorf("--exception: %w", err)}
		}
		reg = newRegistryWith(o.clusterRules, nil, exs)
	}
	snap, policies, err := loadRules(o.rules, s, reg, ruleLoading{policies: true, skipUnknown: o.skipUnknown})
	if err != nil {
		return nil, err
	}
	in := &inputs{snap: snap}
	if in.objs, err = source.ReadPaths(o.files, s.In); err != nil {
		return nil, &ExitError{Code: 2, Err: err}
	}
	if old != nil {
		olds, err := source.ReadPaths(old, s.In)
		if err != nil {
			return nil, &ExitError{Code: 2, Err: err}
		}
		if in.olds, err = pairOld(in.objs, olds, o.namespace); err != nil {
			return nil, &ExitError{Code: 2, Err: err}
		}
	}
	if in.resolver, err = resolverFor(contexts, s, o.packs...); err != nil {
		return nil, err
	}
	in.policies = policies
	if len(o.crds) > 0 {
		if in.crds, err = loadCRDs(context.Background(), o.crds, s); err != nil {
			return nil, err
		}
	}
	if o.userInfo != "" && userOf(in.resolver).Username == "" {
		return nil, usageError("--user-info %s: no UserInfo document with a userInfo.username", o.userInfo)
	}
	return in, nil
}

func usageError(format string, args ...any) error {
	return &ExitError{Code: 2, Err: fmt.Errorf(format, args...)}
}

func runApply(ctx context.Context, o *applyOptions, s Streams) error {
	if ctx == nil {
		ctx = context.Background()
	}
	op, err := o.parse("yaml", "name")
	if err != nil {
		return err
	}
	in, err := o.load(s)
	if err != nil {
		return err
	}
	chain := in.chain(&o.admissionFlags, false)
	var out []any
	var origins []string // where each of out came from, for errors
	var gen []any        // the objects the rules generated, and where from
	var genOrigins []string
	sum := applySummary{rules: in.snap.Len() + in.policies.Len(), applied: map[string]bool{}}
	prog := newProgress(s.Err, "apply", len(in.objs), o.quiet)
	for i := range in.objs {
		d := &in.objs[i]
		a := in.admission(i, o.namespace)
		res, err := chain.Run(ctx, a.request(op))
		if err != nil {
			prog.clear()
			return evaluationError(d, err)
		}
		where := d.Origin + ": " + a.String()
		if !res.Allowed || len(res.Warnings) > 0 || len(res.Pruned) > 0 {
			prog.clear()
		}
		printResult(s, where, res)
		sum.add(res)
		prog.step(i + 1)
		if !res.Allowed {
			continue
		}
		out = append(out, res.Object)
		origins = append(origins, where)
		if res.Decision != nil && op != rules.Delete {
			for _, g := range res.Decision.Generated {
				gen = append(gen, g.Object)
				verb := ": generated by "
				if g.Patch != nil {
					verb = ": changed by "
					sum.changed++
				} else {
					sum.generated++
				}
				genOrigins = append(genOrigins, where+verb+g.Rule+generatedBy(g))
			}
		}
	}
	prog.clear()
	for _, p := range o.payloads {
		obj, err := source.ReadPayload(p)
		if err != nil {
			return &ExitError{Code: 2, Err: fmt.Errorf("--json: %w", err)}
		}
		res, err := chain.Run(ctx, runner.Request{Operation: rules.Create, Object: obj, User: userOf(in.resolver), Payload: true})
		if err != nil {
			return &ExitError{Code: 2, Err: fmt.Errorf("--json %s: %w", p, err)}
		}
		printResult(s, p+": JSON payload", res)
		sum.add(res)
	}
	// Generated objects, and existing objects the rules changed, follow
	// the input, as Kyverno's apply prints them.
	out, origins = append(out, gen...), append(origins, genOrigins...)
	if err := write(s.Out, o.output, out, origins); err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	if !o.quiet {
		fmt.Fprintln(s.Err, sum.String())
	}
	if sum.rejected > 0 {
		return &ExitError{Code: 1}
	}
	return nil
}

// applySummary counts what an apply run did, for its last line on stderr.
type applySummary struct {
	read, patched, rejected, warnings, generated, changed int
	// rules is how many rules were loaded; applied the Mutate rules that
	// changed an object, known when decided is (the engine's decisions:
	// not through the webhook driver).
	rules   int
	applied map[string]bool
	decided bool
}

func (a *applySummary) add(res *runner.Result) {
	a.read++
	a.warnings += len(res.Warnings) + len(res.Pruned)
	switch {
	case !res.Allowed:
		a.rejected++
	case len(res.Patch) > 0:
		a.patched++
	}
	if res.Decision != nil {
		a.decided = true
		for _, r := range res.Decision.Applied {
			a.applied[r.Kind+" "+r.Key] = true
		}
	}
}

// String is the summary line: "apply: 3 objects read: 1 patched, 1
// rejected, 1 admitted unchanged; 2 warnings; 1 of 12 rules patched".
func (a *applySummary) String() string {
	unchanged := a.read - a.patched - a.rejected
	line := fmt.Sprintf("apply: %s read: %d patched, %d rejected, %d admitted unchanged; %s",
		plural(a.read, "object"), a.patched, a.rejected, unchanged, plural(a.warnings, "warning"))
	if a.decided {
		line += fmt.Sprintf("; %d of %s patched", len(a.applied), plural(a.rules, "rule"))
	}
	if a.generated > 0 {
		line += fmt.Sprintf("; %s generated", plural(a.generated, "object"))
	}
	if a.changed > 0 {
		line += fmt.Sprintf("; %s changed", plural(a.changed, "existing object"))
	}
	return line
}

// printResult prints on stderr what the admission of an object (where)
// said beyond the object: the fields the API server prunes, the warnings,
// the rules that rejected it without their message, and the refusal,
// named by the step of the chain that refused it.
func printResult(s Streams, where string, res *runner.Result) {
	if len(res.Pruned) > 0 {
		fmt.Fprintf(s.Err, "warning: %s: the rules added fields the schema does not know, which the API server prunes: %s\n", where, strings.Join(res.Pruned, ", "))
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(s.Err, "warning: %s: %s\n", where, w)
	}
	if res.Allowed {
		return
	}
	label := "rejected"
	switch res.Stage {
	case runner.StageInvalid, runner.StageInvalidAfter:
		label = string(res.Stage)
	case runner.StageRules:
		if res.Decision != nil {
			for _, r := range res.Decision.Rejections {
				if r.MessageError != nil {
					fmt.Fprintf(s.Err, "warning: %s: %s %v (rejected without its message)\n", where, r.Rule, r.MessageError)
				}
			}
		}
	}
	fmt.Fprintf(s.Err, "%s: %s: %s\n", label, where, res.Denial)
}

// generatedBy names the inner rule of a generated object, if any.
func generatedBy(g engine.Generated) string {
	if g.Name == "" {
		return ""
	}
	return ", rule " + g.Name
}

// evaluationError is the exit-2 error for an object the engine could not
// evaluate.
func evaluationError(d *source.Document, err error) error {
	return &ExitError{Code: 2, Err: fmt.Errorf("%s: %s %q: %w", d.Origin, d.Kind(), d.Name(), err)}
}

// printWarnings prints on stderr, each after what (the object), the
// admission warnings of the rules and of the ValidatingAdmissionPolicies
// (explain and test show the rules' errors in their own report).
func printWarnings(s Streams, what string, res *runner.Result) {
	if res.Decision != nil {
		for _, w := range res.Decision.Warnings {
			fmt.Fprintf(s.Err, "warning: %s: %s\n", what, runner.WarningText(w))
		}
	}
	for _, w := range res.PolicyWarnings {
		fmt.Fprintf(s.Err, "warning: %s: %s\n", what, w)
	}
}

// loadSnapshot reads and compiles the rules of the kinds of reg; any
// invalid rule is an exit-2 error listing every problem.
func loadSnapshot(paths []string, s Streams, reg *kinds.Registry) (*engine.Snapshot, error) {
	snap, _, err := loadRules(paths, s, reg, ruleLoading{})
	return snap, err
}

// ruleLoading says what loadRules takes besides the rules of the kinds.
type ruleLoading struct {
	// policies: Kubernetes' admission policies and bindings are rules too.
	policies bool
	// skipUnknown: a document of no served kind is a warning, not an
	// error (--skip-unknown-kinds).
	skipUnknown bool
}

// ErrNoRules is the error of rule paths that hold no rule at all: a run
// that would check nothing.
var ErrNoRules = errors.New("no rules")

// loadRules is loadSnapshot that, with l.policies, also takes Kubernetes'
// ValidatingAdmissionPolicies and bindings (compiled; an invalid one is an
// exit-2 error). A document that is not a rule of a served kind is an
// exit-2 error naming its apiVersion and kind (a warning with
// l.skipUnknown), and so are paths with no rule at all.
func loadRules(paths []string, s Streams, reg *kinds.Registry, l ruleLoading) (*engine.Snapshot, *admissionpolicy.Set, error) {
	docs, err := source.ReadPaths(paths, s.In)
	if err != nil {
		return nil, nil, &ExitError{Code: 2, Err: err}
	}
	set := admissionpolicy.NewSet()
	if l.policies {
		kept := docs[:0:0]
		for _, d := range docs {
			if !admissionpolicy.Handles(d.Object) {
				kept = append(kept, d)
				continue
			}
			if err := set.Add(d.Object); err != nil {
				return nil, nil, &ExitError{Code: 2, Err: fmt.Errorf("%s: %w", d.Origin, err)}
			}
		}
		docs = kept
	}
	res := source.LoadRules(docs, reg)
	for _, d := range res.Deprecated {
		fmt.Fprintln(s.Err, "warning:", d)
	}
	errs := res.Errors
	for _, w := range res.Skipped {
		if l.skipUnknown {
			fmt.Fprintln(s.Err, "warning:", w, "(skipped: --skip-unknown-kinds)")
			continue
		}
		errs = append(errs, errors.New(w+"; --skip-unknown-kinds skips such documents"))
	}
	if len(errs) > 0 {
		return nil, nil, &ExitError{Code: 2, Err: errors.Join(errs...)}
	}
	if len(res.Rules) == 0 && set.Len() == 0 {
		return nil, nil, &ExitError{Code: 2, Err: fmt.Errorf("%w in %s: nothing would be checked (rules are %s, or Kubernetes' admission policies)", ErrNoRules, strings.Join(paths, ", "), reg.Served())}
	}
	return engine.NewSnapshot(res.Rules), set, nil
}

// write prints objects as YAML documents, or as JSON: one object alone, or
// several as a v1 List. origins name the objects in errors.
func write(w io.Writer, format string, objs []any, origins []string) error {
	if format == "name" {
		p := printers.NamePrinter{}
		for _, obj := range objs {
			m, _ := obj.(map[string]any)
			if err := p.PrintObj(&unstructured.Unstructured{Object: m}, w); err != nil {
				return err
			}
		}
		return nil
	}
	if format == "json" {
		var v any = map[string]any{"apiVersion": "v1", "kind": "List", "items": objs}
		if len(objs) == 1 {
			v = objs[0]
		}
		if objs == nil {
			v.(map[string]any)["items"] = []any{}
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "    ")
		if err := enc.Encode(v); err != nil {
			return err
		}
		_, err := w.Write(buf.Bytes())
		return err
	}
	var buf bytes.Buffer
	for i, obj := range objs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		b, err := yaml.Marshal(obj)
		if err != nil {
			return fmt.Errorf("%s: the admitted object cannot be written as YAML (%v); run explain on it to see which rules changed it", origins[i], err)
		}
		buf.Write(b)
	}
	_, err := w.Write(buf.Bytes())
	return err
}
