package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/modwright/modwright/internal/controller"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/translate"
)

type compileOptions struct {
	rules        []string
	output       string
	clusterRules string
	skipUnknown  bool
	placement    string
}

func newCompileCmd(s Streams) *cobra.Command {
	o := &compileOptions{}
	cmd := &cobra.Command{
		Use:   "compile --rules PATH [-o yaml|json] [--placement fastest|native]",
		Short: "Translate rules into Kubernetes admission policies where CEL expresses them exactly",
		Long: `compile writes, for every ModRule, Policy, Gatekeeper template and constraint,
and Kyverno ValidatingPolicy and MutatingPolicy whose semantics CEL can express exactly, an
equivalent MutatingAdmissionPolicy and/or ValidatingAdmissionPolicy with its
binding (admissionregistration.k8s.io/v1), which the API server runs
in-process with no webhook call. Every rule it cannot translate is listed on
standard error with the reason (other languages, context entries, Sprig
functions, syntheticRefs, Kyverno's CEL libraries...); those stay with the
webhook.

A rule that translates but runs faster in the webhook is kept there and
listed too ("kept in the webhook: ... faster there"): one whose requests the
webhook is called for anyway, for a rule given that is left to it (of the
same namespace, or one that applies anywhere). Its admission policy would add
the API server's own admission (a share of a create) on top of that call,
where the rule costs the webhook a few microseconds. --placement native
translates those too (a cluster that wants no webhook on their way).

A Policy's are named modwright.<kind>.<namespace>.<name>; the ModRules of
one scope and type make one policy, modwright.modrules.<namespace>.<reject|patch>-<hash>;
a ValidatingPolicy's kyverno-vpol-<name>, a MutatingPolicy's
kyverno-mpol-<name> (and -autogen, -autogen-cronjobs for their pod
controllers).
All are labeled modwright.io/compiled=true and annotated
modwright.io/compiled-from with their rules. Each is checked as the API server
checks it when it is created.

Exit status: 0 (rules left to or kept in the webhook are not an error); 2 when a path
cannot be read or a rule is invalid.`,
		Example: `  modwright compile --rules examples/policies
  modwright compile --rules examples/policies -o json
  modwright compile --rules testdata/compile/kyverno-cel.yaml
  modwright compile --rules testdata/compile/modrules.yaml --rules testdata/compile/left.yaml --placement native`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCompile(cmd.Context(), o, s) },
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.rules, "rules", nil, "rules: a file, a directory or - (repeatable)")
	f.StringVarP(&o.output, "output", "o", "yaml", "output format: yaml or json (a v1 List)")
	f.StringVar(&o.clusterRules, "cluster-rules-namespace", defaultClusterRulesNamespace, "namespace whose rules are cluster-wide")
	f.StringVar(&o.placement, "placement", "fastest", "fastest keeps in the webhook the rules that run faster there; native translates every rule that can be")
	f.BoolVar(&o.skipUnknown, "skip-unknown-kinds", false, "warn about documents in --rules that are not rules of a served kind, instead of failing (exit 2)")
	return cmd
}

func runCompile(_ context.Context, o *compileOptions, s Streams) error {
	if len(o.rules) == 0 {
		return usageError("give the rules to compile: --rules PATH")
	}
	if o.output != "yaml" && o.output != "json" {
		return usageError("--output must be yaml or json, not %q", o.output)
	}
	placement, err := translate.ParsePlacement(o.placement)
	if err != nil {
		return usageError("--placement: %v", err)
	}
	if err := checkStdin(o.rules, nil, nil, nil); err != nil {
		return err
	}
	res, err := compileRules(o.rules, s, o.clusterRules, o.skipUnknown, placement)
	if err != nil {
		return err
	}
	var out []any
	compiled := 0
	for _, t := range res.Translated {
		compiled += len(t.Rules)
		for _, obj := range t.Objects {
			out = append(out, obj)
		}
	}
	kept := 0
	for _, sk := range res.Skipped {
		what := "not compiled"
		if sk.Kept {
			what = "kept in the webhook"
			kept++
		}
		fmt.Fprintf(s.Err, "%s: %s: %s %s: %s\n", what, sk.Rule.Origin, sk.Rule.Kind, sk.Rule.Key(), sk.Reason)
	}
	fmt.Fprintf(s.Err, "compiled %d of %s", compiled, plural(compiled+len(res.Skipped), "rule"))
	if kept > 0 {
		fmt.Fprintf(s.Err, " (%d more translate but run faster in the webhook)", kept)
	}
	fmt.Fprintln(s.Err)
	if err := write(s.Out, o.output, out, nil); err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	return nil
}

// compileRules loads the rules at paths as apply does (an invalid one is
// an exit-2 error), translates them and places them (translate.Place: the
// webhook serves the rules given that are not translated).
func compileRules(paths []string, s Streams, clusterNS string, skipUnknown bool, placement translate.Placement) (translate.Result, error) {
	reg := newRegistry(clusterNS)
	snap, _, err := loadRules(paths, s, reg, ruleLoading{policies: true, skipUnknown: skipUnknown})
	if err != nil {
		return translate.Result{}, err
	}
	docs, err := source.ReadPaths(paths, s.In)
	if err != nil {
		return translate.Result{}, &ExitError{Code: 2, Err: err}
	}
	var rules, templates, constraints, kyvernoCEL []translate.Rule
	var untranslated []translate.Skip
	for i := range docs {
		k := reg.For(&docs[i])
		r := translate.Rule{Kind: docs[i].Kind(), Origin: docs[i].Origin, Object: docs[i].Object}
		switch {
		case reg.Defines(&docs[i]):
			templates = append(templates, r)
		case k == nil:
		case isGatekeeperConstraint(k.Group()):
			constraints = append(constraints, r)
		case isGatekeeperKind(k.Group()):
			untranslated = append(untranslated, translate.Skip{Rule: r,
				Reason: "Gatekeeper's mutators are not translated to admission policies (yet): the webhook serves them"})
		case isKyvernoCELKind(k.Group()):
			kyvernoCEL = append(kyvernoCEL, translate.Rule{Kind: k.Name(), Origin: docs[i].Origin, Object: docs[i].Object})
		case isKyvernoKind(k.Group()):
			// Kyverno's kinds share names with modwright's former ones:
			// they never reach the translator as such.
			untranslated = append(untranslated, translate.Skip{
				Rule:   translate.Rule{Kind: k.Name(), Origin: docs[i].Origin, Object: docs[i].Object},
				Reason: "Kyverno's " + k.Name() + " is not translated to admission policies (yet): the webhook serves it"})
		default:
			rules = append(rules, translate.Rule{Kind: k.Name(), Origin: docs[i].Origin, Object: docs[i].Object})
		}
	}
	res := translate.Compile(rules, translate.Options{ClusterRulesNamespace: clusterNS})
	if len(templates) > 0 || len(constraints) > 0 {
		gk := translate.Gatekeeper(templates, constraints)
		res.Translated = append(res.Translated, gk.Translated...)
		res.Skipped = append(res.Skipped, gk.Skipped...)
	}
	if len(kyvernoCEL) > 0 {
		ky := translate.Kyverno(kyvernoCEL)
		res.Translated = append(res.Translated, ky.Translated...)
		res.Skipped = append(res.Skipped, ky.Skipped...)
	}
	res.Skipped = append(res.Skipped, untranslated...)
	return translate.Place(res, placement, controller.Scopes(snap)), nil
}
