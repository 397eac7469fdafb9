package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	gkv1 "github.com/modwright/modwright/api/gatekeeper/v1"
	kpoliciesv1 "github.com/modwright/modwright/api/kyverno/policies/v1"
	kyvernov1 "github.com/modwright/modwright/api/kyverno/v1"
	kyvernov2 "github.com/modwright/modwright/api/kyverno/v2"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/gatekeeper"
	"github.com/modwright/modwright/internal/kinds/kinitiras"
	"github.com/modwright/modwright/internal/kinds/kyverno"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/kinds/policy"
	cuelang "github.com/modwright/modwright/internal/lang/cue"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/source/cluster"
	"github.com/modwright/modwright/internal/suite"
)

// defaultClusterRulesNamespace is the --cluster-rules-namespace default.
const defaultClusterRulesNamespace = modrule.DefaultClusterRulesNamespace

// newRegistry is the kinds modwright serves from files (apply, test,
// explain, lint, krm), with clusterNS as the cluster-rules namespace (""
// for the default): the one place the front ends name a kind. CUE runs in
// this process.
func newRegistry(clusterNS string) *kinds.Registry {
	return newServingRegistry(clusterNS, cuelang.Language{})
}

// newServingRegistry is newRegistry compiling CUE with cue (serve
// --standalone: its workers).
func newServingRegistry(clusterNS string, cue cuelang.Language) *kinds.Registry {
	ks := append([]kinds.Kind{modrule.NewKind(clusterNS)}, policy.NewKinds(policy.WithCUE(cue))...)
	ks = append(ks, kinitiras.NewKinds(kinitiras.WithCUE(cue))...)
	ks = append(ks, kyverno.NewKinds()...)
	ks = append(ks, kyverno.NewCELKinds()...)
	ks = append(ks, gatekeeper.NewKind())
	return kinds.NewRegistry(append(ks, gatekeeper.NewMutatorKinds()...)...)
}

// clusterKinds are the peers' kinds the operator serves beside its own.
type clusterKinds struct {
	kinitiras, kyverno, kyvernoCEL, gatekeeper bool
}

// newClusterRegistry is the kinds the operator watches in the cluster,
// compiling CUE with cue: kinitiras' with --kinitiras, Kyverno's with
// --kyverno, Kyverno's CEL policies with --kyverno-cel, Gatekeeper's
// mutators with --gatekeeper (their CRDs must then be installed).
func newClusterRegistry(clusterNS string, with clusterKinds, exceptions, celExceptions *cluster.CompiledSet, cue cuelang.Language) *kinds.Registry {
	ks := append([]kinds.Kind{modrule.NewKind(clusterNS)}, policy.NewKinds(policy.WithCUE(cue))...)
	if with.kinitiras {
		ks = append(ks, kinitiras.NewKinds(kinitiras.WithCUE(cue))...)
	}
	if with.gatekeeper {
		ks = append(ks, gatekeeper.NewKind())
		ks = append(ks, gatekeeper.NewMutatorKinds()...)
	}
	if with.kyverno {
		var opts []kyverno.Option
		if exceptions != nil {
			opts = append(opts, kyverno.WithExceptionSource(exceptionItems{exceptions}))
		}
		ks = append(ks, kyverno.NewKinds(opts...)...)
	}
	if with.kyvernoCEL {
		var opts []kyverno.Option
		if celExceptions != nil {
			opts = append(opts, kyverno.WithExceptionSource(exceptionItems{celExceptions}))
		}
		ks = append(ks, kyverno.NewCELKinds(opts...)...)
	}
	return kinds.NewRegistry(ks...)
}

// newKyvernoExceptionSet is the operator's set of Kyverno PolicyExceptions
// of the trusted namespaces.
func newKyvernoExceptionSet(c cache.Cache, namespaces []string, log logr.Logger) *cluster.CompiledSet {
	return &cluster.CompiledSet{GVK: schema.GroupVersionKind{Group: kyvernov1.Group, Version: "v2", Kind: kyvernov2.KindPolicyException},
		Namespaces: namespaces, Cache: c, Log: log,
		Compile: func(m *kinds.Manifest) (any, error) { return kyverno.CompileException(m) }}
}

// newKyvernoCELExceptionSet is the operator's set of the PolicyExceptions
// of Kyverno's CEL policies (policies.kyverno.io) in the trusted
// namespaces.
func newKyvernoCELExceptionSet(c cache.Cache, namespaces []string, log logr.Logger) *cluster.CompiledSet {
	return &cluster.CompiledSet{GVK: schema.GroupVersionKind{Group: kpoliciesv1.Group, Version: kpoliciesv1.Version, Kind: kpoliciesv1.KindPolicyException},
		Namespaces: namespaces, Cache: c, Log: log,
		Compile: func(m *kinds.Manifest) (any, error) { return kyverno.CompileException(m) }}
}

// exceptionItems reads the set's exceptions for the kind.
type exceptionItems struct{ s *cluster.CompiledSet }

func (e exceptionItems) Exceptions() []*kyverno.Exception {
	items := e.s.Items()
	out := make([]*kyverno.Exception, 0, len(items))
	for _, it := range items {
		if ex, ok := it.(*kyverno.Exception); ok {
			out = append(out, ex)
		}
	}
	return out
}

// kyvernoRuleResult is a Kyverno policy's rule result (a trace detail).
type kyvernoRuleResult = kyverno.RuleResult

// The statuses of Kyverno's rule results.
const (
	kyvernoPass = kyverno.Pass
	kyvernoFail = kyverno.Fail
)

// The offline resolver tells Kyverno's validate.cel params a kind's scope.
var (
	_ kyverno.ScopeReader      = (*staticResolver)(nil)
	_ kyverno.KindResolver     = (*staticResolver)(nil)
	_ kyverno.ResourceResolver = (*staticResolver)(nil)
)

// kyvernoResults are the rule results a trace detail holds.
func kyvernoResults(detail any) []kyvernoRuleResult { return kyverno.ResultsOf(detail) }

// isGatekeeperKind: a constraint of a Gatekeeper template's kind, or a
// Gatekeeper mutator.
func isGatekeeperKind(group string) bool {
	return group == gkv1.ConstraintsGroup || group == gkv1.MutationsGroup
}

// newGatorRegistry is the registry of a gator verify suite: the kinds
// served, with constraints reviewing every operation as gator does.
func newGatorRegistry() *kinds.Registry {
	var ks []kinds.Kind
	for _, k := range newRegistry("").Kinds() {
		if k.Group() == gkv1.ConstraintsGroup {
			k = gatekeeper.NewKind(gatekeeper.AnyOperation())
		}
		ks = append(ks, k)
	}
	return kinds.NewRegistry(ks...)
}

// isGatekeeperConstraint: a constraint of a Gatekeeper template's kind.
func isGatekeeperConstraint(group string) bool { return group == gkv1.ConstraintsGroup }

// isKyvernoKind: a rule of Kyverno's own kinds (kyverno.io, and its CEL
// policies' policies.kyverno.io).
func isKyvernoKind(group string) bool { return group == kyvernov1.Group || isKyvernoCELKind(group) }

// isKyvernoCELKind: a rule of Kyverno's CEL policy kinds.
func isKyvernoCELKind(group string) bool { return group == kpoliciesv1.Group }

// newKyvernoTestRegistry is the registry of a kyverno-test.yaml's policies:
// Kyverno's kinds given the suite's values and PolicyExceptions (files).
func newKyvernoTestRegistry(v *suite.KyvernoValues, exceptions []string) (*kinds.Registry, error) {
	exs, err := compileExceptions(exceptions, nil)
	if err != nil {
		return nil, err
	}
	return newRegistryWith("", v, exs), nil
}

// compileExceptions reads and compiles the PolicyExceptions of paths
// (kyverno.io's and policies.kyverno.io's; in may be standard input).
func compileExceptions(paths []string, in io.Reader) ([]*kyverno.Exception, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	docs, err := source.ReadPaths(paths, in)
	if err != nil {
		return nil, err
	}
	var exs []*kyverno.Exception
	for i := range docs {
		if docs[i].Kind() != kyvernov2.KindPolicyException {
			return nil, fmt.Errorf("%s: %s %s is not a PolicyException (kyverno.io or policies.kyverno.io)", docs[i].Origin, docs[i].APIVersion(), docs[i].Kind())
		}
		ex, err := kyverno.CompileException(&docs[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", docs[i].Origin, err)
		}
		exs = append(exs, ex)
	}
	return exs, nil
}

// newRegistryWith is newRegistry with Kyverno's kinds given a suite's
// values (nil: none) and PolicyExceptions.
func newRegistryWith(clusterNS string, v *suite.KyvernoValues, exs []*kyverno.Exception) *kinds.Registry {
	var ks []kinds.Kind
	for _, k := range newRegistry(clusterNS).Kinds() {
		if !isKyvernoKind(k.Group()) {
			ks = append(ks, k)
		}
	}
	ks = append(ks, kyverno.NewKinds(kyverno.WithValues(kyvernoValues(v)), kyverno.WithExceptions(exs...))...)
	return kinds.NewRegistry(append(ks, kyverno.NewCELKinds(kyverno.WithExceptions(exs...))...)...)
}

// kyvernoValues converts a suite's values to the kind's.
func kyvernoValues(v *suite.KyvernoValues) *kyverno.Values {
	if v == nil {
		return nil
	}
	nv := func(m map[string]any) []kyverno.NameValue {
		keys := slices.Sorted(maps.Keys(m))
		out := make([]kyverno.NameValue, len(keys))
		for i, k := range keys {
			out[i] = kyverno.NameValue{Name: k, Value: m[k]}
		}
		return out
	}
	out := &kyverno.Values{Global: nv(v.GlobalValues)}
	for _, p := range v.Policies {
		pv := kyverno.PolicyValues{Name: p.Name}
		for _, r := range p.Resources {
			pv.Resources = append(pv.Resources, kyverno.ResourceValues{Name: r.Name, Values: nv(r.Values)})
		}
		for _, r := range p.Rules {
			pv.Rules = append(pv.Rules, kyverno.RuleValues{Name: r.Name, Values: nv(r.Values)})
		}
		out.Policies = append(out.Policies, pv)
	}
	return out
}

// gatekeeperViolations are the messages of a constraint's violations that
// gator verify counts (a trace detail), nil for other details;
// isConstraint reports whether the detail is a constraint's.
func gatekeeperViolations(detail any) (msgs []string, isConstraint bool) {
	tr, ok := detail.(*gatekeeper.Trace)
	if !ok {
		return nil, false
	}
	if !tr.Gator {
		return nil, true // a scoped constraint gator does not run
	}
	for _, v := range gatekeeper.ViolationsOf(detail) {
		msgs = append(msgs, v.Msg)
	}
	return msgs, true
}
