package rules

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/jsonpath"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/template"
)

// Operation is an admission operation.
type Operation = v1beta1.ModRuleAdmissionOperation

// Admission operations.
const (
	Create = v1beta1.ModRuleAdmissionOperationCreate
	Update = v1beta1.ModRuleAdmissionOperationUpdate
	Delete = v1beta1.ModRuleAdmissionOperationDelete
)

// opBit maps an operation to its bit in Rule.ops.
func opBit(op Operation) uint8 {
	switch op {
	case Create:
		return 1
	case Update:
		return 2
	case Delete:
		return 4
	}
	return 0
}

// Rule is a compiled ModRule. It is immutable once compiled.
type Rule struct {
	// Source is the rule as loaded, with defaults applied.
	Source *v1beta1.ModRule
	// Key is namespace/name ("name" alone for a rule with no namespace).
	Key       string
	Namespace string
	Name      string
	Type      v1beta1.ModRuleType
	Tier      int
	// Err is set when the rule failed to compile; such a rule is never evaluated.
	Err error

	ops      uint8
	kinds    []string // nil: any kind; empty non-nil: no kind can match
	Criteria []Criterion
	Patches  []PatchOp
	// RejectMessage is nil when the rule has no message.
	RejectMessage *template.Template
	// TargetNamespaces is nil when the rule has no (or an empty) targetNamespaceRegex.
	TargetNamespaces *regexp.Regexp
	// UsesSyntheticRefs is true when any expression or template mentions syntheticRefs.
	UsesSyntheticRefs bool
}

// Operations reports whether the rule reacts to op.
func (r *Rule) Operations(op Operation) bool { return r.ops&opBit(op) != 0 }

// Kinds returns the kinds the rule is pinned to, or nil when any kind can match.
func (r *Rule) Kinds() []string { return r.kinds }

// Criterion is a compiled match item.
type Criterion struct {
	Field  string // spec.match[i]
	Select *jsonpath.Expr
	All    bool
	Value  *string
	Values []string
	Regex  *regexp.Regexp
	Negate bool
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
	Select *jsonpath.Expr // nil: one operation at Path
	Path   PathTemplate
	// Value renders the value text; for static values StaticValue holds the
	// parsed tree and Value.Static() is true.
	Value       *template.Template
	StaticValue any
}

// Compile compiles one ModRule. The rule is copied and defaulted first; the
// argument is not modified. On failure the returned Rule still describes the
// rule (Key, Type, Tier) and carries the error in Err, and the error is
// returned too (a *CompileError wrapping ErrInvalidRule). Compile caches
// nothing; CompileWith shares parsed expressions among many rules.
func Compile(mr *v1beta1.ModRule) (*Rule, error) { return CompileWith(mr, nil) }

// CompileWith is Compile, taking the rule's select expressions and regular
// expressions from cache and adding them to it; cache may be nil (none).
// Loaders that compile many rules keep a Cache (see Cache).
func CompileWith(mr *v1beta1.ModRule, cache *Cache) (*Rule, error) {
	src := mr.DeepCopy()
	src.Default()
	r := &Rule{
		Source:    src,
		Key:       src.NamespacedName(),
		Namespace: src.Namespace,
		Name:      src.Name,
		Type:      src.Spec.Type,
		Tier:      src.Spec.ExecutionTier,
	}
	c := compiler{rule: r, cache: cache}
	c.compile()
	if len(c.errs) > 0 {
		r.Err = &CompileError{Rule: r.Key, Errors: c.errs}
		r.Criteria, r.Patches, r.RejectMessage, r.TargetNamespaces = nil, nil, nil, nil
		return r, r.Err
	}
	return r, nil
}

type compiler struct {
	rule  *Rule
	cache *Cache // nil: none
	errs  []FieldError
}

func (c *compiler) add(fieldPath string, pos int, format string, args ...any) {
	c.errs = append(c.errs, FieldError{Field: fieldPath, Pos: pos, Msg: fmt.Sprintf(format, args...)})
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
	for _, op := range spec.AdmissionOperations {
		r.ops |= opBit(op)
	}

	for i := range spec.Match {
		c.compileCriterion(i, &spec.Match[i])
	}
	r.kinds = pinnedKinds(r.Criteria)

	if r.Type == v1beta1.ModRuleTypePatch {
		for i := range spec.Patch {
			c.compilePatch(i, &spec.Patch[i])
		}
	}
	if spec.RejectMessage != nil {
		t, err := template.Compile("spec.rejectMessage", *spec.RejectMessage)
		if err != nil {
			c.add("spec.rejectMessage", -1, "%v", err)
		}
		r.RejectMessage = t
		r.UsesSyntheticRefs = r.UsesSyntheticRefs || mentionsRefs(*spec.RejectMessage)
	}
	if spec.TargetNamespaceRegex != nil && *spec.TargetNamespaceRegex != "" {
		re, pos, err := c.compileRegex(*spec.TargetNamespaceRegex)
		if err != nil {
			c.add("spec.targetNamespaceRegex", pos, "%v", err)
		}
		r.TargetNamespaces = re
	}
}

func fieldError(fe *field.Error) FieldError {
	msg := fe.ErrorBody()
	return FieldError{Field: fe.Field, Pos: -1, Msg: msg}
}

func mentionsRefs(s string) bool { return strings.Contains(s, "syntheticRefs") }

func (c *compiler) compileExpr(fieldPath, src string) *jsonpath.Expr {
	e, err := c.cache.expr(src)
	if err != nil {
		var se *jsonpath.SyntaxError
		if errors.As(err, &se) {
			c.add(fieldPath, se.Pos, "%s (in %q)", se.Msg, src)
		} else {
			c.add(fieldPath, -1, "%v", err)
		}
		return nil
	}
	c.rule.UsesSyntheticRefs = c.rule.UsesSyntheticRefs || mentionsRefs(src)
	return e
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
func (c *compiler) compileRegex(src string) (*regexp.Regexp, int, error) {
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
			if !op.Select.IsQuery() {
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
		t, err := template.Compile(f+".value", text)
		if err != nil {
			c.add(f+".value", -1, "%v", err)
		} else {
			op.Value = t
			c.rule.UsesSyntheticRefs = c.rule.UsesSyntheticRefs || mentionsRefs(text)
			if t.Static() {
				v, err := template.ParseValue(text)
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
		if cr.Select == nil || cr.Negate || cr.Select.String() != "$.kind" {
			continue
		}
		var vals []string
		switch {
		case cr.Value != nil:
			vals = []string{*cr.Value}
		case len(cr.Values) > 0:
			vals = cr.Values
		default:
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
