package conditions

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modwright/modwright/internal/lang/subst"
)

// Condition is one Kyverno condition as decoded from a policy: Key and
// Value are JSON value trees (numbers json.Number) whose strings may hold
// {{ }} variables.
type Condition struct {
	Key      any
	Operator string
	Value    any
	Message  string
}

// Block is a Kyverno condition block: every condition of All must hold
// and, when Any is not nil, at least one of Any (an empty, non-nil Any
// never holds, as in Kyverno).
type Block struct {
	All, Any []Condition
}

// Error is a problem Compile found: Field is relative to the block
// ("all[2].operator"), Pos a byte offset in that field's text or -1.
type Error struct {
	Field string
	Pos   int
	Msg   string
}

// Set is a compiled Block. It is immutable and safe for concurrent use.
type Set struct {
	all, any []compiled
	hasAny   bool
}

type compiled struct {
	field      string // "all[0]"
	op         opKind
	opName     string
	key, value *subst.Document
	message    *subst.Template
	msgText    string
}

// Step is one condition evaluated, for explanations: Key and Value are
// substituted.
type Step struct {
	Field      string
	Key, Value any
	Operator   string
	Result     bool
	Err        error
}

// Compile checks the operators and compiles the {{ }} variables of keys,
// values and messages once.
func Compile(b Block) (*Set, []Error) {
	var errs []Error
	list := func(name string, cs []Condition) []compiled {
		out := make([]compiled, 0, len(cs))
		for i, c := range cs {
			f := fmt.Sprintf("%s[%d]", name, i)
			cc := compiled{field: f, opName: c.Operator, msgText: c.Message}
			op, ok := lookupOperator(c.Operator)
			if !ok {
				errs = append(errs, Error{Field: f + ".operator", Pos: -1, Msg: fmt.Sprintf("unknown operator %q: use one of %s", c.Operator, strings.Join(Operators(), ", "))})
			}
			cc.op = op
			var err error
			if cc.key, err = subst.CompileDocument(c.Key); err != nil {
				errs = append(errs, substError(f+".key", err))
			}
			if cc.value, err = subst.CompileDocument(c.Value); err != nil {
				errs = append(errs, substError(f+".value", err))
			}
			if c.Message != "" {
				if cc.message, err = subst.Compile(c.Message); err != nil {
					errs = append(errs, substError(f+".message", err))
				}
			}
			out = append(out, cc)
		}
		return out
	}
	s := &Set{all: list("all", b.All), any: list("any", b.Any), hasAny: b.Any != nil}
	if len(errs) > 0 {
		return nil, errs
	}
	return s, nil
}

func substError(field string, err error) Error {
	var se *subst.SyntaxError
	if errors.As(err, &se) {
		return Error{Field: field, Pos: se.Pos, Msg: se.Msg}
	}
	return Error{Field: field, Pos: -1, Msg: err.Error()}
}

// Expressions lists the {{ }} expressions of the block's keys, values and
// messages (a Resolver may compile them once at load).
func (s *Set) Expressions() []string {
	var out []string
	for _, l := range [][]compiled{s.all, s.any} {
		for _, c := range l {
			out = append(out, c.key.Expressions()...)
			out = append(out, c.value.Expressions()...)
			if c.message != nil {
				out = append(out, c.message.Expressions()...)
			}
		}
	}
	return out
}

// NestedExpressions lists the expressions of the block's variables nested
// in another variable (subst.Template.NestedExpressions).
func (s *Set) NestedExpressions() []string {
	var out []string
	for _, l := range [][]compiled{s.all, s.any} {
		for _, c := range l {
			out = append(out, c.key.NestedExpressions()...)
			out = append(out, c.value.NestedExpressions()...)
			if c.message != nil {
				out = append(out, c.message.NestedExpressions()...)
			}
		}
	}
	return out
}

// Eval decides the block, as Kyverno's evaluation of an any/all block:
// every condition of all is evaluated until one fails, those of any until
// one holds. msg joins (with "; ") the messages of the conditions that
// decided: those that held when the block holds, else those that failed.
// A substitution error ends the evaluation. step, when not nil, sees each
// condition evaluated.
func (s *Set) Eval(ctx context.Context, r subst.Resolver, step func(Step)) (ok bool, msg string, err error) {
	anyOK, allOK := true, true
	var held, failed []string
	if s.hasAny {
		anyOK = false
		for i := range s.any {
			res, m, err := s.any[i].eval(ctx, r, step)
			if err != nil {
				return false, "", err
			}
			if res {
				anyOK = true
				held = append(held, m)
				break
			}
			failed = append(failed, m)
		}
	}
	for i := range s.all {
		res, m, err := s.all[i].eval(ctx, r, step)
		if err != nil {
			return false, "", err
		}
		if !res {
			allOK = false
			failed = append(failed, m)
			break
		}
		held = append(held, m)
	}
	if anyOK && allOK {
		return true, joinNonEmpty(held), nil
	}
	return false, joinNonEmpty(failed), nil
}

func joinNonEmpty(ms []string) string {
	var out []string
	for _, m := range ms {
		if m != "" {
			out = append(out, m)
		}
	}
	return strings.Join(out, "; ")
}

func (c *compiled) eval(ctx context.Context, r subst.Resolver, step func(Step)) (bool, string, error) {
	key, err := c.key.Substitute(ctx, r)
	if err != nil {
		err = fmt.Errorf("%s.key: failed to substitute variables: %w", c.field, err)
		if step != nil {
			step(Step{Field: c.field, Operator: c.opName, Err: err})
		}
		return false, "", err
	}
	value, err := c.value.Substitute(ctx, r)
	if err != nil {
		err = fmt.Errorf("%s.value: failed to substitute variables: %w", c.field, err)
		if step != nil {
			step(Step{Field: c.field, Key: key, Operator: c.opName, Err: err})
		}
		return false, "", err
	}
	nk, nv := normalize(key), normalize(value)
	if err := checkQuantities(nk, nv); err != nil {
		err = fmt.Errorf("%s: %w", c.field, err)
		if step != nil {
			step(Step{Field: c.field, Key: key, Value: value, Operator: c.opName, Err: err})
		}
		return false, "", err
	}
	res := evaluate(c.op, nk, nv)
	if step != nil {
		step(Step{Field: c.field, Key: key, Value: value, Operator: c.opName, Result: res})
	}
	msg := c.msgText
	if c.message != nil && c.message.HasVariables() {
		// A message whose variables fail is kept as written.
		if v, err := c.message.Render(ctx, r, nil); err == nil {
			if t, err := subst.Text(v); err == nil {
				msg = t
			}
		}
	} else if c.message != nil {
		if v, err := c.message.Render(ctx, r, nil); err == nil {
			msg, _ = v.(string)
		}
	}
	return res, msg, nil
}

// Evaluate applies one operator to substituted values (JSON value trees):
// an unknown operator is an error.
func Evaluate(key any, operator string, value any) (bool, error) {
	op, ok := lookupOperator(operator)
	if !ok {
		return false, fmt.Errorf("unknown operator %q", operator)
	}
	nk, nv := normalize(key), normalize(value)
	if err := checkQuantities(nk, nv); err != nil {
		return false, err
	}
	return evaluate(op, nk, nv), nil
}
