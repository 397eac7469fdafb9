package modrule

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/jsonpath"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
)

// Kind is the kind of the rules this package compiles, as manifests spell
// it.
const Kind = v1beta1.Kind

// DefaultClusterRulesNamespace is where cluster-wide rules live unless
// configured otherwise (KubeMod's namespace).
const DefaultClusterRulesNamespace = "kubemod-system"

// Rule is a compiled ModRule. It is immutable once compiled. RuleInfo (the
// kernel's view: Key, Namespace, Name, Tier, Err...) is embedded.
type Rule struct {
	engine.RuleInfo
	// Source is the rule as loaded, with defaults applied.
	Source *v1beta1.ModRule
	Type   v1beta1.ModRuleType

	Criteria []Criterion
	Patches  []PatchOp
	// RejectMessage is nil when the rule has no message.
	RejectMessage lang.Text
	// TargetNamespaces is nil when the rule has no (or an empty) targetNamespaceRegex.
	TargetNamespaces *jsonpath.Matcher

	clusterNS string // the cluster-rules namespace it was compiled for
}

var _ engine.Rule = (*Rule)(nil)

// Info is the kernel's view of the rule.
func (r *Rule) Info() *engine.RuleInfo { return &r.RuleInfo }

// Operations reports whether the rule reacts to op.
func (r *Rule) Operations(op rules.Operation) bool { return r.Index.Operations.Has(op) }

// Kinds returns the kinds the rule is pinned to, or nil when any kind can match.
func (r *Rule) Kinds() []string { return r.Index.Kinds }

// InScope decides the scope of a cluster rule with a targetNamespaceRegex:
// objects of every namespace its regex matches (the empty name standing for
// cluster-scoped objects).
func (r *Rule) InScope(ns string) bool {
	return r.TargetNamespaces != nil && r.TargetNamespaces.MatchString(ns)
}

// Criterion is a compiled match item.
type Criterion struct {
	Field  string // spec.match[i]
	Select lang.Query
	All    bool
	Value  *string
	Values []string
	Regex  *jsonpath.Matcher
	Negate bool
}

// exactValues are the values a criterion's matchValue or matchValues
// compares with (Test), or nil for another matcher or none.
func (c *Criterion) exactValues() []string {
	switch {
	case c.Value != nil:
		return []string{*c.Value}
	case len(c.Values) > 0:
		return c.Values
	}
	return nil
}

// HasMatcher reports whether the criterion tests values (matchValue,
// matchValues or matchRegex) rather than mere existence.
func (c *Criterion) HasMatcher() bool {
	return c.Value != nil || len(c.Values) > 0 || c.Regex != nil
}

// Test reports whether one value's text satisfies the matcher.
func (c *Criterion) Test(text string) bool {
	switch {
	case c.Value != nil:
		return text == *c.Value
	case len(c.Values) > 0:
		for _, v := range c.Values {
			if text == v {
				return true
			}
		}
		return false
	case c.Regex != nil:
		return c.Regex.MatchString(text)
	}
	return true
}

// PatchOp is a compiled patch operation.
type PatchOp struct {
	Field  string // spec.patch[i]
	Op     patch.OpType
	Select lang.Query // nil: one operation at Path
	Path   PathTemplate
	// Value renders the value text; for static values StaticValue holds the
	// parsed tree and Value.Static() is true.
	Value       lang.Text
	StaticValue any
}

// Compiler compiles ModRules. The zero value is ready to use.
type Compiler struct {
	// Cache shares parsed select expressions and regular expressions
	// among many rules (see Cache); nil caches nothing.
	Cache *Cache
	// ClusterRulesNamespace holds the rules that apply to cluster-scoped
	// objects and, through targetNamespaceRegex, to other namespaces.
	// Empty means DefaultClusterRulesNamespace.
	ClusterRulesNamespace string
}

// Compile compiles one ModRule with the zero Compiler.
func Compile(mr *v1beta1.ModRule) (*Rule, error) { return Compiler{}.Compile(mr) }

// CompileWith compiles one ModRule, sharing cache (see Compiler).
func CompileWith(mr *v1beta1.ModRule, cache *Cache) (*Rule, error) {
	return Compiler{Cache: cache}.Compile(mr)
}

// Compile compiles one ModRule. The rule is copied and defaulted first; the
// argument is not modified. On failure the returned Rule still describes the
// rule (Key, Type, Tier) and carries the error in Err, and the error is
// returned too (a *rules.CompileError wrapping rules.ErrInvalidRule).
func (cc Compiler) Compile(mr *v1beta1.ModRule) (*Rule, error) { return cc.compileOwned(mr.DeepCopy()) }

// compileOwned is Compile of a ModRule no one else holds (one just
// decoded): it is defaulted and kept as the rule's Source, not copied.
func (cc Compiler) compileOwned(src *v1beta1.ModRule) (*Rule, error) {
	src.Default()
	r := &Rule{
		RuleInfo: engine.RuleInfo{
			Kind:      Kind,
			Key:       src.NamespacedName(),
			Namespace: src.Namespace,
			Name:      src.Name,
			Tier:      src.Spec.ExecutionTier,
			Phase:     engine.Mutate,
		},
		Source: src,
		Type:   src.Spec.Type,
	}
	if r.Type == v1beta1.ModRuleTypeReject {
		r.Phase = engine.Validate
	}
	c := compiler{rule: r, cache: cc.Cache}
	c.compile()
	r.clusterNS = cc.ClusterRulesNamespace
	if r.clusterNS == "" {
		r.clusterNS = DefaultClusterRulesNamespace
	}
	r.Index = r.indexKeys(r.clusterNS)
	r.Inputs = refsFor(c.readsRefs, c.readsEdges)
	if len(c.errs) > 0 {
		r.Err = &rules.CompileError{Kind: Kind, Rule: r.Key, Errors: c.errs}
		r.Criteria, r.Patches, r.RejectMessage, r.TargetNamespaces = nil, nil, nil, nil
		return r, r.Err
	}
	return r, nil
}

// indexKeys places the rule: a rule of a namespace applies to its
// objects; a rule with no namespace to every object; a rule of the
// cluster-rules namespace to cluster-scoped objects, or, with a
// targetNamespaceRegex, to the namespaces it matches.
func (r *Rule) indexKeys(clusterNS string) engine.IndexKeys {
	keys := engine.IndexKeys{Kinds: r.Index.Kinds, Fields: fields(r.Criteria)}
	for _, op := range r.Source.Spec.AdmissionOperations {
		keys.Operations |= engine.OpSetOf(rules.Operation(op))
	}
	switch {
	case r.Namespace == "":
		keys.AnyNamespace = true
	case r.Namespace != clusterNS:
		keys.Namespace = r.Namespace
	case r.TargetNamespaces != nil:
		keys.AnyNamespace, keys.Filtered = true, true
	default:
		keys.Namespace = "" // cluster-scoped objects
	}
	return keys
}

type compiler struct {
	rule  *Rule
	cache *Cache // nil: none
	errs  []rules.FieldError
	// readsRefs, readsEdges: the rule reads syntheticRefs, its edges.
	readsRefs, readsEdges bool
}

func (c *compiler) add(fieldPath string, pos int, format string, args ...any) {
	c.errs = append(c.errs, rules.FieldError{Field: fieldPath, Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (c *compiler) compile() {
	r := c.rule
	spec := &r.Source.Spec
	if r.Source.Name == "" {
		c.add("metadata.name", -1, "required")
	}
	for _, fe := range r.Source.ValidateStructure() {
		c.errs = append(c.errs, fieldError(fe))
	}
	if len(spec.Match) > 0 {
		r.Criteria = make([]Criterion, 0, len(spec.Match))
	}
	for i := range spec.Match {
		c.compileCriterion(i, &spec.Match[i])
	}
	r.Index.Kinds = pinnedKinds(r.Criteria)

	if r.Type == v1beta1.ModRuleTypePatch {
		if len(spec.Patch) > 0 {
			r.Patches = make([]PatchOp, 0, len(spec.Patch))
		}
		for i := range spec.Patch {
			c.compilePatch(i, &spec.Patch[i])
		}
	}
	if spec.RejectMessage != nil {
		r.RejectMessage = c.compileText("spec.rejectMessage", *spec.RejectMessage)
		c.noteRefs(*spec.RejectMessage)
	}
	if spec.TargetNamespaceRegex != nil && *spec.TargetNamespaceRegex != "" {
		re, pos, err := c.compileRegex(*spec.TargetNamespaceRegex)
		if err != nil {
			c.add("spec.targetNamespaceRegex", pos, "%v", err)
		}
		r.TargetNamespaces = re
	}
}

func fieldError(fe *field.Error) rules.FieldError {
	msg := fe.ErrorBody()
	return rules.FieldError{Field: fe.Field, Pos: -1, Msg: msg}
}

func mentionsRefs(s string) bool { return strings.Contains(s, "syntheticRefs") }

// noteRefs records what an expression or template reads of syntheticRefs:
// the related objects, and the object's edges when it names them
// (syntheticRefs.edges, a modwright extension: docs/modrule.md).
func (c *compiler) noteRefs(src string) {
	if mentionsRefs(src) {
		c.readsRefs = true
		c.readsEdges = c.readsEdges || strings.Contains(src, "edges")
	}
}

func (c *compiler) compileExpr(fieldPath, src string) lang.Query {
	e, err := c.cache.expr(src)
	if err != nil {
		var d *lang.Diagnostic
		if errors.As(err, &d) {
			c.add(fieldPath, d.Pos, "%s (in %q)", d.Msg, src)
		} else {
			c.add(fieldPath, -1, "%v", err)
		}
		return nil
	}
	c.noteRefs(src)
	return e
}

// compileText compiles a template: a patch value or the reject message.
func (c *compiler) compileText(fieldPath, src string) lang.Text {
	t, err := compileTemplate(fieldPath, src)
	if err != nil {
		pos := -1
		var d *lang.Diagnostic
		if errors.As(err, &d) {
			pos, err = d.Pos, errors.New(d.Msg)
		}
		c.add(fieldPath, pos, "%v", err)
		return nil
	}
	c.noteRefs(src)
	return t
}

func (c *compiler) compileCriterion(i int, m *v1beta1.MatchItem) {
	f := fmt.Sprintf("spec.match[%d]", i)
	cr := Criterion{
		Field:  f,
		All:    m.MatchFor != nil && *m.MatchFor == v1beta1.MatchForTypeAll,
		Value:  m.MatchValue,
		Values: m.MatchValues,
		Negate: m.Negate,
	}
	if m.Select != "" {
		cr.Select = c.compileExpr(f+".select", m.Select)
	}
	if m.MatchRegex != nil {
		re, pos, err := c.compileRegex(*m.MatchRegex)
		if err != nil {
			c.add(f+".matchRegex", pos, "%v", err)
		}
		cr.Regex = re
	}
	c.rule.Criteria = append(c.rule.Criteria, cr)
}

// compileRegex compiles an RE2 expression and locates the offending part of
// a bad one.
func (c *compiler) compileRegex(src string) (*jsonpath.Matcher, int, error) {
	re, err := c.cache.regex(src)
	if err == nil {
		return re, -1, nil
	}
	pos := -1
	var rerr *syntax.Error
	if errors.As(err, &rerr) && rerr.Expr != "" {
		pos = strings.Index(src, rerr.Expr)
	}
	return nil, pos, fmt.Errorf("invalid regular expression: %v", err)
}

func (c *compiler) compilePatch(i int, po *v1beta1.PatchOperation) {
	f := fmt.Sprintf("spec.patch[%d]", i)
	op := PatchOp{Field: f, Op: patch.OpType(po.Operation)}
	captures := 0
	if po.Select != nil && *po.Select != "" {
		op.Select = c.compileExpr(f+".select", *po.Select)
		if op.Select != nil {
			if !op.Select.IsPath() {
				c.add(f+".select", 0, "must be a path ($... ), not a computed expression (in %q)", *po.Select)
			}
			captures = op.Select.Captures()
		}
	}
	if po.Path != "" {
		pt, err := compilePath(po.Path, true)
		if err != nil {
			c.add(f+".path", err.pos, "%s", err.msg)
		} else if pt.UnderSyntheticRefs() {
			c.add(f+".path", 1, "%s is under /syntheticRefs, which holds the related objects (namespace, node) the rules read: rules cannot change it", po.Path)
		} else {
			op.Path = pt
			if op.Select == nil && pt.MaxPlaceholder >= 0 {
				pos := strings.Index(po.Path, "#"+strconv.Itoa(pt.MaxPlaceholder))
				c.add(f+".path", pos, "placeholder #%d needs a select that captures keys; this operation has no select", pt.MaxPlaceholder)
			} else if op.Select != nil && pt.MaxPlaceholder >= captures {
				pos := strings.Index(po.Path, "#"+strconv.Itoa(pt.MaxPlaceholder))
				c.add(f+".path", pos, "placeholder #%d needs %d capturing steps in select, but %q captures %d (only wildcards, filters, slices, unions and .. capture)",
					pt.MaxPlaceholder, pt.MaxPlaceholder+1, *po.Select, captures)
			}
		}
	}
	if op.Op != patch.Remove {
		text := "null"
		if po.Value != nil {
			text = *po.Value
		}
		if t := c.compileText(f+".value", text); t != nil {
			op.Value = t
			if t.Static() {
				v, err := parseValue(text)
				if err != nil {
					c.add(f+".value", -1, "%v", err)
				}
				op.StaticValue = v
			}
		}
	}
	c.rule.Patches = append(c.rule.Patches, op)
}

// pinnedKinds returns the kinds a rule is limited to by criteria that select
// exactly $.kind and compare it with literal values without negation, or nil
// when nothing pins the kind.
func pinnedKinds(criteria []Criterion) []string {
	var kinds []string
	pinned := false
	for i := range criteria {
		cr := &criteria[i]
		if cr.Select == nil || cr.Negate || cr.Select.Canonical() != "$.kind" {
			continue
		}
		vals := cr.exactValues()
		if vals == nil {
			continue
		}
		if !pinned {
			kinds = dedupe(vals)
			pinned = true
			continue
		}
		kinds = intersect(kinds, vals)
	}
	if pinned && kinds == nil {
		kinds = []string{}
	}
	return kinds
}

// fields are the criteria the kernel may decide (engine.Field): the
// longest run of them from the first that selects a path of member names
// and tests it with matchValue or matchValues, not negated. Such a
// criterion's select yields no value where a member is missing (the
// criterion does not hold, with no error), and a string as it is. The
// paths are the queries' own (Names), which rules that share a cached
// query share, so that the kernel walks each once per object.
func fields(criteria []Criterion) []engine.Field {
	type named interface{ Names() ([]string, bool) }
	var fs []engine.Field
	for i := range criteria {
		cr := &criteria[i]
		if cr.Select == nil || cr.Negate {
			return fs
		}
		vals := cr.exactValues()
		if vals == nil {
			return fs
		}
		nq, ok := cr.Select.(named)
		if !ok {
			return fs
		}
		path, ok := nq.Names()
		if !ok {
			return fs
		}
		fs = append(fs, engine.Field{Path: path, Values: vals})
	}
	return fs
}

func dedupe(vals []string) []string {
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		if !contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func intersect(a, b []string) []string {
	out := []string{}
	for _, v := range a {
		if contains(b, v) {
			out = append(out, v)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
