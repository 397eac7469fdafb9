package cel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/modwright/modwright/internal/lang"
)

// The variables the Activation's fields bind; other declared variables are
// bound from Activation.Vars by name.
const (
	VarObject    = "object"    // Activation.Object
	VarOldObject = "oldObject" // Activation.OldObject
	VarSelf      = "self"      // Activation.Item
)

// PerCallLimit is the default cost budget of one evaluation (MaxWork 0):
// the apiserver's per-expression limit.
const PerCallLimit = celconfig.PerCallLimit

// maxRequestBytes bounds the size of a value the cost estimate cannot
// know (a dynamic list, map or string): the apiserver's largest request
// body (3 MiB), as CRD validation bounds lists without maxItems.
const maxRequestBytes = 3 * 1024 * 1024

// Language is CEL; its zero value is ready to use. With Envs, expressions
// that declare the same variables share one environment (see EnvCache);
// without, each builds its own.
type Language struct {
	Envs *EnvCache
	// OrValueCompat makes x.orValue(y) accept a value that is not an
	// optional (it is returned as it is), as cel-go before v0.28 and
	// Kyverno's CEL policies do (orvalue.go).
	OrValueCompat bool
	// Generator declares Kyverno's generator library (generator.go): the
	// environment must declare the variable VarGenerator.
	Generator bool
	// KyvernoLibs declares Kyverno's CEL libraries that read nothing but
	// their arguments (kyvernolibs.go): image, user.
	KyvernoLibs bool
	// KyvernoData declares Kyverno's libraries that read data
	// (kyvernodata.go), the resource library of that scope, and those
	// that parse (json, yaml, x509); the variables DataVars are bound
	// with BindKyvernoData.
	KyvernoData DataScope
}

// extras are the environment options the Language's switches add, their
// name for the environment cache, and the variables they declare.
func (l Language) extras() (string, []cel.EnvOption, []string) {
	var name string
	var opts []cel.EnvOption
	var vars []string
	if l.OrValueCompat {
		name, opts = "orvalue-compat", orValueCompat()
	}
	if l.Generator {
		name, opts = name+"+generator", append(opts, generatorLib()...)
	}
	if l.KyvernoLibs {
		name, opts = name+"+kyverno", append(opts, kyvernoLibs()...)
	}
	if l.KyvernoData != NoData {
		o, v := kyvernoDataLibs(l.KyvernoData)
		name, opts, vars = name+fmt.Sprintf("+data%d", l.KyvernoData), append(opts, o...), v
	}
	return name, opts, vars
}

// Name returns "cel".
func (Language) Name() string { return "cel" }

// Compile compiles src against env with type-checking: each variable of
// env is declared with the dynamic type; Diagnostics are positioned at
// the byte offset CEL's location names. See the package doc for the
// limits.
func (l Language) Compile(env *lang.Env, src string) (lang.Program, []lang.Diagnostic) {
	p, ds := l.CompileExpr(env, src)
	if ds != nil {
		return nil, ds
	}
	return p, nil
}

// CompileExpr is Compile returning the concrete *Program.
func (l Language) CompileExpr(env *lang.Env, src string) (*Program, []lang.Diagnostic) {
	name, extra, vars := l.extras()
	return compileCEL(l.Envs, env, src, name, extra, vars, nil, typedVars{})
}

// CompileTyped is CompileExpr with some variables declared with a type
// instead of the dynamic one (a CRD schema's, as the API server declares
// a CRD rule's self): the expression is type-checked against it. The
// program evaluates as CompileExpr's; a typed variable may be bound to a
// value of its type (crdschema's) or to a JSON value.
//
// With Envs, a typed variable's environment is keyed by the identity of
// its *DeclType: a caller that declares the same type again passes the
// same pointer, and keeps the cache no longer than the types (one rule's).
func (l Language) CompileTyped(env *lang.Env, src string, typed map[string]*apiservercel.DeclType) (*Program, []lang.Diagnostic) {
	return compileCEL(l.Envs, env, src, "", nil, nil, nil, typedVars{decls: typed})
}

// CompileTypedAs is CompileTyped with the typed variables' types named by
// key instead of by their identity: the caller vouches that every call
// with the same key declares the same types (types built from the same
// description, such as a policy's variables: their names and types), so
// that rules declaring equal types share one environment and its programs
// through Envs, each rule with types of its own.
func (l Language) CompileTypedAs(env *lang.Env, src string, typed map[string]*apiservercel.DeclType, key string) (*Program, []lang.Diagnostic) {
	return compileCEL(l.Envs, env, src, "", nil, nil, nil, typedVars{decls: typed, key: key})
}

// typedVars are the variables declared with a type (by name) and, when
// the caller names them, the name of those types (CompileTypedAs).
type typedVars struct {
	decls map[string]*apiservercel.DeclType
	key   string
}

// compileCEL compiles src against env extended with extra (named
// extraName, for the cache), which declares libVars (an env variable of
// that name is theirs); want, when not nil, is the type the
// expression must have (exactly, as the apiserver checks a mutation's
// type); typed declares those variables with their types. The environment
// comes from envs when it has one for the same variables.
func compileCEL(envs *EnvCache, env *lang.Env, src string, extraName string, extra []cel.EnvOption, libVars []string, want *cel.Type, typed typedVars) (*Program, []lang.Diagnostic) {
	budget := env.Limits.MaxWork
	if budget < 0 {
		return nil, []lang.Diagnostic{{Pos: -1, Msg: fmt.Sprintf("limit MaxWork %d is not supported: cel's budget must be positive", budget)}}
	}
	if budget == 0 {
		budget = PerCallLimit
	}
	opts, names, ds := declare(env, extra, libVars, typed.decls)
	if ds != nil {
		return nil, ds
	}
	key := envKey(names, typed.decls, typed.key, extraName)
	pk := programKey{env: key, src: src, budget: budget}
	if want != nil {
		pk.want = want.String()
		if want == jsonPatchWhole {
			pk.want += " (whole)"
		}
	}
	if p := envs.program(pk); p != nil {
		return p, nil
	}
	entry := envs.get(key, func() (*cel.Env, cel.ProgramOption, error) {
		envSet := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
		if len(typed.decls) > 0 {
			var dts []*apiservercel.DeclType
			for _, dt := range typed.decls {
				dts = append(dts, dt)
			}
			var err error
			if envSet, err = envSet.Extend(environment.VersionedOptions{IntroducedVersion: version.MajorMinor(1, 0), DeclTypes: dts}); err != nil {
				return nil, nil, err
			}
		}
		ce, err := envSet.NewExpressionsEnv().Extend(opts...)
		if err != nil {
			return nil, nil, err
		}
		bounded, err := boundCalls(ce)
		if err != nil {
			return nil, nil, fmt.Errorf("program instantiation failed: %w", err)
		}
		return ce, bounded, nil
	})
	ce, bounded, err := entry.env, entry.bounded, entry.err
	if err != nil {
		return nil, []lang.Diagnostic{{Pos: -1, Msg: err.Error()}}
	}
	ast, iss := ce.Compile(src)
	if iss.Err() != nil {
		for _, e := range iss.Errors() {
			ds = append(ds, lang.Diagnostic{Pos: offset(src, e), Msg: e.Message})
		}
		return nil, ds
	}
	if want != nil && !ast.OutputType().IsExactType(want) {
		return nil, []lang.Diagnostic{{Pos: 0, Msg: fmt.Sprintf("must evaluate to %v but got %v", want, ast.OutputType())}}
	}
	// The worst case over inputs up to the largest request (Cost), and
	// the cost that does not depend on the inputs' sizes, which refuses.
	est, err := ce.EstimateCost(ast, &library.CostEstimator{SizeEstimator: sizeEstimator{maxRequestBytes}})
	if err != nil {
		return nil, []lang.Diagnostic{{Pos: -1, Msg: "cost estimation failed: " + err.Error()}}
	}
	fixed, err := ce.EstimateCost(ast, &library.CostEstimator{SizeEstimator: sizeEstimator{0}})
	if err != nil {
		return nil, []lang.Diagnostic{{Pos: -1, Msg: "cost estimation failed: " + err.Error()}}
	}
	// An estimate near the top of the range depends on a size no literal
	// gives (cel-go's estimate of a function's result, string(x), is
	// unbounded, and sums and products of it saturate): not refused, as
	// the apiserver accepts such expressions; the runtime budget bounds
	// them.
	if fixed.Max > uint64(budget) && fixed.Max < UnboundedCost {
		return nil, []lang.Diagnostic{{Pos: -1, Msg: costMessage(fixed.Max, uint64(budget))}}
	}
	large, err := ce.EstimateCost(ast, &library.CostEstimator{SizeEstimator: sizeEstimator{LargeSize}})
	if err != nil {
		return nil, []lang.Diagnostic{{Pos: -1, Msg: "cost estimation failed: " + err.Error()}}
	}
	members, whole := selectedMembers(ast, names)
	p := &Program{src: src, vars: names, reads: readVars(ast, names), members: members, whole: whole, objectPaths: objectPaths(ast, names),
		min: est.Min, max: est.Max, large: large.Max, typ: ast.OutputType(), env: entry, quick: est.Max <= QuickCost,
		field: fieldTest(ast.NativeRep().Expr()), budget: uint64(budget)}
	if _, typedObject := typed.decls[VarObject]; !typedObject {
		p.native = nativeValueOf(ast.NativeRep().Expr())
		p.nbool = nativeBoolOf(ast.NativeRep().Expr())
	}
	if want == jsonPatchResult {
		// Taken apart, the expression is not evaluated whole: it needs
		// no program of its own (a cel-go program carries its own
		// dispatcher of every function, about 18 KB).
		p.patch = planJSONPatch(ast.NativeRep(), uint64(budget), func(src string, budget uint64) *Program {
			sub := *env
			sub.Limits.MaxWork = int64(budget)
			values, ds := compileCEL(envs, &sub, src, extraName, extra, libVars, nil, typed)
			if ds != nil {
				return nil
			}
			return values
		})
	}
	if p.patch == nil {
		p.prg, err = ce.Program(ast,
			cel.CostLimit(uint64(budget)),
			cel.InterruptCheckFrequency(celconfig.CheckFrequency),
			bounded,
			costTrackers(),
		)
		if err != nil {
			return nil, []lang.Diagnostic{{Pos: -1, Msg: "program instantiation failed: " + err.Error()}}
		}
	}
	return envs.keep(pk, p), nil
}

// declare declares env's variables (a library's own, libVars, are only
// named; typed ones get their declared types): the environment's options
// after extra, and the variables' names.
func declare(env *lang.Env, extra []cel.EnvOption, libVars []string, typed map[string]*apiservercel.DeclType) ([]cel.EnvOption, []string, []lang.Diagnostic) {
	opts := append([]cel.EnvOption{library.JSONPatch()}, extra...)
	names := make([]string, 0, len(env.Vars))
	var ds []lang.Diagnostic
	for _, v := range env.Vars {
		if !IsIdentifier(v.Name) {
			ds = append(ds, lang.Diagnostic{Pos: -1, Msg: fmt.Sprintf("environment %q declares variable %q, which is not a CEL identifier", env.Name, v.Name)})
			continue
		}
		if slices.Contains(libVars, v.Name) {
			names = append(names, v.Name)
			continue
		}
		if v.Name == VarAuthorizer {
			opts = append(opts, authzVars()...)
			names = append(names, VarAuthorizer, VarRequestResource)
			continue
		}
		if dt, ok := typed[v.Name]; ok {
			opts = append(opts, cel.Variable(v.Name, dt.CelType()))
		} else {
			opts = append(opts, cel.Variable(v.Name, cel.DynType))
		}
		names = append(names, v.Name)
	}
	return opts, names, ds
}

// UnboundedCost: an estimate from this on is cel-go's "unknown size" (a
// function's result, an optional's value), not a cost the literals or
// sizes of an expression make.
const UnboundedCost = math.MaxUint64 / 1024

// costMessage says by how much an estimate exceeds the budget, in the
// apiserver's words.
func costMessage(est, budget uint64) string {
	if est == math.MaxUint64 {
		return fmt.Sprintf("estimated expression cost exceeds the budget %d (the cost is unbounded)", budget)
	}
	return fmt.Sprintf("estimated expression cost %d exceeds the budget %d by factor of %.1fx (try simplifying the expression)", est, budget, float64(est)/float64(budget))
}

// offset is the 0-based byte offset in src of e's location (line 1-based,
// column 0-based in code points), or -1 when e has none.
func offset(src string, e *common.Error) int {
	if e.Location == nil {
		return -1
	}
	return offsetAt(src, e.Location.Line(), e.Location.Column())
}

// offsetAt is the byte offset of line (1-based) and col (0-based, in code
// points) in src, or -1 when src has no such line.
func offsetAt(src string, line, col int) int {
	if line < 1 || col < 0 {
		return -1
	}
	pos := 0
	for ; line > 1; line-- {
		i := indexNewline(src[pos:])
		if i < 0 {
			return -1
		}
		pos += i + 1
	}
	for ; col > 0 && pos < len(src) && src[pos] != '\n'; col-- {
		_, n := utf8.DecodeRuneInString(src[pos:])
		pos += n
	}
	return pos
}

func indexNewline(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return i
		}
	}
	return -1
}

// IsIdentifier reports whether s is a CEL identifier (letters, digits and
// _, not starting with a digit): a name an environment can declare.
func IsIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// sizeEstimator bounds the sizes of the variables' values (and of what
// is read from them), which the estimate cannot know, by max: a list of
// max/2 elements ("0,"), a map of max/4 members (`"":0,`), a string or
// bytes of max bytes. The checker estimates computed sizes itself.
type sizeEstimator struct{ max uint64 }

func (e sizeEstimator) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	if n.Path() == nil {
		return nil
	}
	max := e.max
	switch n.Type().Kind() {
	case types.ListKind:
		max /= 2
	case types.MapKind:
		max /= 4
	}
	return &checker.SizeEstimate{Min: 0, Max: max}
}

func (e sizeEstimator) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	return nil
}

// Program is a compiled CEL expression; it is immutable and safe for
// concurrent use.
type Program struct {
	src   string
	prg   cel.Program
	vars  []string
	reads []string // the declared variables the expression refers to
	// members are, by declared variable, the members the expression
	// selects on it (variables.x); whole names those it reads otherwise
	// too (passed along, indexed).
	members map[string][]string
	whole   []string
	// objectPaths are the paths into the object the expression reads
	// (ObjectPaths).
	objectPaths [][]string
	min, max    uint64
	large       uint64
	typ         *cel.Type
	// patch is a JSONPatch expression taken apart (patchplan.go), or nil;
	// prg is nil when it is not.
	patch *patchPlan
	// env keeps the environment the program was compiled against in the
	// cache (EnvCache holds it weakly) for as long as the program lives.
	env *envEntry
	// quick: the worst case over the largest request costs at most
	// QuickCost, so an evaluation ends in microseconds whatever its input:
	// it needs no context to be interrupted by (eval).
	quick bool
	// field: the expression is a FieldTest, or nil.
	field *FieldTest
	// native: the expression is evaluated without cel-go where it can be
	// (nativeValue), or nil; budget is its cost limit.
	native *nativeValue
	nbool  *nativeBool
	budget uint64
}

// FieldTest returns the test of one string of the object the expression
// is (see FieldTest), or nil when it is not one. The result is shared:
// the caller must not change it.
func (p *Program) FieldTest() *FieldTest { return p.field }

// QuickCost is the most an expression may cost at worst (Cost's maximum)
// for its evaluations to be left without a context to interrupt them: a
// few microseconds of work, less than the interval at which a comprehension
// looks at its context (celconfig.CheckFrequency iterations). cel-go gives
// each evaluation with a context one of its own (context.WithCancel,
// registered with a cancellable parent and removed again), which costs
// more than such an expression.
const QuickCost = 1000

// Reads reports whether the expression refers to no declared variable but
// those of only: its value is then the same for any activation binding
// them to the same values.
func (p *Program) Reads(only ...string) bool {
	for _, r := range p.reads {
		if !slices.Contains(only, r) {
			return false
		}
	}
	return true
}

// Members are the members the expression selects on the declared variable
// name (name.x: x); whole reports whether it reads name otherwise as well
// (passed along, indexed), so that any member may be read.
func (p *Program) Members(name string) (members []string, whole bool) {
	return p.members[name], slices.Contains(p.whole, name)
}

// selectedMembers are the members selected on each declared variable
// (of names) the checked expression a reads, and the variables it reads
// otherwise too.
func selectedMembers(a *cel.Ast, names []string) (map[string][]string, []string) {
	refs := a.NativeRep().ReferenceMap()
	declared := func(e ast.Expr) (string, bool) {
		if e.Kind() != ast.IdentKind {
			return "", false
		}
		r, ok := refs[e.ID()]
		if !ok || len(r.OverloadIDs) != 0 || !slices.Contains(names, r.Name) {
			return "", false
		}
		return r.Name, true
	}
	members := map[string][]string{}
	selected := map[int64]bool{} // the identifiers read through a select
	ast.PostOrderVisit(a.NativeRep().Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		if e.Kind() != ast.SelectKind {
			return
		}
		s := e.AsSelect()
		if name, ok := declared(s.Operand()); ok {
			selected[s.Operand().ID()] = true
			if !slices.Contains(members[name], s.FieldName()) {
				members[name] = append(members[name], s.FieldName())
			}
		}
	}))
	var whole []string
	ast.PostOrderVisit(a.NativeRep().Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		if name, ok := declared(e); ok && !selected[e.ID()] && !slices.Contains(whole, name) {
			whole = append(whole, name)
		}
	}))
	return members, whole
}

// ObjectPaths are the paths into the object (VarObject) the expression
// reads: each chain of selections, constant indexes and optional ones on
// `object` (object.spec.replicas, object.metadata.?labels['app']), as
// far as it goes; an empty path when it reads the object otherwise (passed
// along, iterated). What the expression computes from the object depends
// on these subtrees only.
func (p *Program) ObjectPaths() [][]string { return p.objectPaths }

// objectPaths computes ObjectPaths of the checked expression a (names: the
// declared variables).
func objectPaths(a *cel.Ast, names []string) [][]string {
	if !slices.Contains(names, VarObject) {
		return nil
	}
	refs := a.NativeRep().ReferenceMap()
	paths := map[int64][]string{} // the chains on object, by expression
	extended := map[int64]bool{}  // chains a longer one goes on from
	ast.PostOrderVisit(a.NativeRep().Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		var operand ast.Expr
		var tok string
		switch e.Kind() {
		case ast.IdentKind:
			if r, ok := refs[e.ID()]; ok && len(r.OverloadIDs) == 0 && r.Name == VarObject {
				paths[e.ID()] = []string{}
			}
			return
		case ast.SelectKind:
			operand, tok = e.AsSelect().Operand(), e.AsSelect().FieldName()
		case ast.CallKind:
			c := e.AsCall()
			switch c.FunctionName() {
			case operators.Index, operators.OptIndex, operators.OptSelect:
			default:
				return
			}
			if len(c.Args()) != 2 || c.Args()[1].Kind() != ast.LiteralKind {
				return
			}
			switch k := c.Args()[1].AsLiteral().(type) {
			case types.String:
				tok = string(k)
			case types.Int:
				tok = strconv.FormatInt(int64(k), 10)
			case types.Uint:
				tok = strconv.FormatUint(uint64(k), 10)
			default:
				return
			}
			operand = c.Args()[0]
		default:
			return
		}
		if base, ok := paths[operand.ID()]; ok {
			paths[e.ID()] = append(base[:len(base):len(base)], tok)
			extended[operand.ID()] = true
		}
	}))
	out := [][]string{}
	for id, p := range paths {
		if !extended[id] {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	return slices.CompactFunc(out, slices.Equal)
}

// ReadsAny reports whether the expression refers to one of names.
func (p *Program) ReadsAny(names ...string) bool {
	return slices.ContainsFunc(p.reads, func(r string) bool { return slices.Contains(names, r) })
}

// readVars is the declared variables (of names) that the checked
// expression a refers to.
func readVars(a *cel.Ast, names []string) []string {
	var out []string
	for _, ref := range a.NativeRep().ReferenceMap() {
		if len(ref.OverloadIDs) == 0 && slices.Contains(names, ref.Name) && !slices.Contains(out, ref.Name) {
			out = append(out, ref.Name)
		}
	}
	return out
}

// ResultType is the type the checker found for the expression's value:
// "bool", "string", "int", "null_type", "list(dyn)", ..., or "dyn" when
// it depends on the inputs (a field of the object).
func (p *Program) ResultType() string { return p.typ.String() }

// DeclType is the expression's result type as a declared type, for a
// variable other expressions read (as the apiserver types an admission
// policy's variables): the scalar types as they are, anything else dyn.
func (p *Program) DeclType() *apiservercel.DeclType {
	switch p.typ.String() {
	case "bool":
		return apiservercel.BoolType
	case "int":
		return apiservercel.IntType
	case "uint":
		return apiservercel.UintType
	case "double":
		return apiservercel.DoubleType
	case "string":
		return apiservercel.StringType
	case "bytes":
		return apiservercel.BytesType
	}
	return apiservercel.DynType
}

// ResultIs reports whether the expression's type is one of the named
// types (ResultType's names), exactly, as the apiserver checks an
// admission policy's expressions: "dyn" is a type of its own (a field of
// the object is dyn: `object.spec.replicas` is not a bool, `object.x == 1`
// is).
func (p *Program) ResultIs(names ...string) bool {
	for _, n := range names {
		if p.typ.String() == n {
			return true
		}
	}
	return false
}

// LargeSize is the size LargeCost assumes of every list, map and string
// an expression reads: a large object, short of the largest request.
const LargeSize = 1024

// LargeCost returns the estimated worst cost of an evaluation over a large
// but plausible object: every list, map and string the expression reads
// holds up to LargeSize elements or bytes. Above the per-call budget, the
// expression is likely to fail on large objects (lint warns); Cost's
// maximum, over the largest request, is above it for most expressions
// that iterate.
func (p *Program) LargeCost() uint64 { return p.large }

var _ lang.Program = (*Program)(nil)

// Source returns the expression's text.
func (p *Program) Source() string { return p.src }

// Cost returns the estimated cost of an evaluation, in CEL cost units,
// over inputs up to the apiserver's largest request (3 MiB): a maximum
// above the budget is not refused (Eval's budget bounds it), a warning.
func (p *Program) Cost() (min, max uint64) { return p.min, p.max }

// RuntimeCostBudget is the apiserver's runtime cost budget of one
// evaluation of a whole policy (its variables, conditions, validations and
// mutations together), in CEL cost units: the rule kind sums EvalCost's
// costs against it.
const RuntimeCostBudget = celconfig.RuntimeCELCostBudget

// Eval evaluates the expression over in and returns its value as a JSON
// tree (nil, bool, string, json.Number, []any, map[string]any).
func (p *Program) Eval(ctx context.Context, in *lang.Activation) (any, error) {
	v, _, err := p.EvalCost(ctx, in)
	return v, err
}

// EvalCost is Eval with the evaluation's actual cost, in CEL cost units, as
// the apiserver counts it (cel-go's runtime cost tracking with Kubernetes'
// cost estimator). When the evaluation fails the cost is what was spent
// until it failed, as far as cel-go reports it (the budget's limit when it
// was exceeded).
func (p *Program) EvalCost(ctx context.Context, in *lang.Activation) (any, uint64, error) {
	out, cost, err := p.eval(ctx, in)
	if err != nil {
		return nil, cost, err
	}
	v, err := toJSON(out)
	if err != nil {
		return nil, cost, err
	}
	return v, cost, nil
}

// EvalValue is EvalCost returning the CEL value itself, not a JSON tree: a
// value to hand back to CEL, as a lang.Lazy's member (a variable whose
// value has no JSON form, a quantity or an IP, stays usable). Only this
// package can read it.
func (p *Program) EvalValue(ctx context.Context, in *lang.Activation) (any, uint64, error) {
	out, cost, err := p.eval(ctx, in)
	if err != nil {
		return nil, cost, err
	}
	return out, cost, nil
}

// EvalBool evaluates a condition: a result that is not a bool is an error
// naming its type.
func (p *Program) EvalBool(ctx context.Context, in *lang.Activation) (bool, error) {
	b, _, err := p.EvalBoolCost(ctx, in)
	return b, err
}

// EvalBoolCost is EvalBool with the evaluation's actual cost (see
// EvalCost).
func (p *Program) EvalBoolCost(ctx context.Context, in *lang.Activation) (bool, uint64, error) {
	out, cost, err := p.eval(ctx, in)
	if err != nil {
		return false, cost, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, cost, fmt.Errorf("cel: expression %q evaluated to %s, want bool", p.src, out.Type().TypeName())
	}
	return b, cost, nil
}

func (p *Program) eval(ctx context.Context, in *lang.Activation) (refVal, uint64, error) {
	if p.native != nil {
		if out, cost, ok := p.native.eval(in, p.budget); ok {
			return out, cost, nil
		}
	}
	if p.nbool != nil && in != nil {
		be := boolEval{in: in, budget: p.budget}
		if v, cost, ok := p.nbool.eval(&be); ok && cost <= p.budget {
			return types.Bool(v), cost, nil
		}
	}
	return p.evalCEL(ctx, in)
}

// evalCEL evaluates the program with cel-go.
func (p *Program) evalCEL(ctx context.Context, in *lang.Activation) (refVal, uint64, error) {
	if p.prg == nil {
		return nil, 0, errors.New("cel: a JSONPatch taken apart is evaluated through its plan (Mutation), not whole")
	}
	act := activation{in: in, vars: p.vars}
	var (
		out refVal
		det *cel.EvalDetails
		err error
	)
	if p.quick {
		out, det, err = p.prg.Eval(&act)
	} else {
		out, det, err = p.prg.ContextEval(ctx, &act)
	}
	var cost uint64
	if det != nil {
		if c := det.ActualCost(); c != nil {
			cost = *c
		}
	}
	if err != nil {
		return nil, cost, evalError(ctx, err)
	}
	return out, cost, nil
}

// evalError classifies an evaluation error: the cost limit (lang.Limit),
// a cancelled ctx (wrapping ctx.Err()), or the error itself.
func evalError(ctx context.Context, err error) error {
	var ce interpreter.EvalCancelledError
	if errors.As(err, &ce) {
		switch ce.Cause {
		case interpreter.CostLimitExceeded:
			return lang.Limit(fmt.Errorf("cel: %w", err))
		case interpreter.ContextCancelled:
			if ctx.Err() != nil {
				return fmt.Errorf("cel: %w: %w", ctx.Err(), err)
			}
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("cel: %w: %w", ctx.Err(), err)
	}
	return fmt.Errorf("cel: %w", err)
}
