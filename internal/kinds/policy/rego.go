package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/modwright/modwright/api/v1alpha1"
	"github.com/modwright/modwright/internal/lang/rego"
	"github.com/modwright/modwright/internal/value"
)

// regoProg is a compiled Rego member: names are the context entries and
// variables its module names (the ones put in input.context).
type regoProg struct {
	prog   *rego.Program
	source string
	names  []string
}

// ErrRegoResult: a Rego entrypoint gave a value of the wrong type for its
// slot.
var ErrRegoResult = errors.New("rego result has the wrong type")

// regoProgram compiles a Rego member; vars are the variables it may read
// (a variable reads the ones before it). A compile error names the field,
// and OPA's message the module's line and column.
func (c *compiler) regoProgram(field string, src *v1alpha1.RegoExpression, vars []variable) *regoProg {
	p, err := rego.Compile(context.Background(), src.Entrypoint, 0, rego.Module{File: field + ".module", Source: src.Module})
	if err != nil {
		c.errorf(field, -1, "%v", err)
		return nil
	}
	rp := &regoProg{prog: p, source: src.Entrypoint + "\n" + src.Module}
	for _, v := range vars {
		if regexp.MustCompile(`\b` + regexp.QuoteMeta(v.name) + `\b`).MatchString(src.Module) {
			rp.names = append(rp.names, v.name)
		}
	}
	return rp
}

// regoInput is a Rego program's input: object (null on DELETE, as in
// admission policies), oldObject (the existing object on UPDATE and
// DELETE), request and context (the context entries and variables the
// module names, as JSON).
func (ev *run) regoInput(rp *regoProg) (map[string]any, error) {
	s := sharedOf(ev.h)
	ctxv := make(map[string]any, len(rp.names))
	if err := ev.addVariables(ctxv, rp.names); err != nil {
		return nil, err
	}
	var obj any
	if ev.act.Object != nil {
		obj = ev.act.Object
	}
	return map[string]any{"object": obj, "oldObject": s.oldObject(ev.h), "request": s.request(ev.h), "context": ctxv}, nil
}

// regoEval evaluates a Rego member: its value (nil when undefined).
func (ev *run) regoEval(rp *regoProg) (any, error) {
	in, err := ev.regoInput(rp)
	if err != nil {
		return nil, err
	}
	out, err := rp.prog.Eval(ev.ctx, in)
	if err != nil {
		return nil, err
	}
	return plainNumbers(out)
}

// plainNumbers turns OPA's json.Number into the numbers of a decoded JSON
// tree (int64 or float64), in place.
func plainNumbers(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		return value.Decode([]byte(v))
	case map[string]any:
		for k, e := range v {
			n, err := plainNumbers(e)
			if err != nil {
				return nil, err
			}
			v[k] = n
		}
	case []any:
		for i, e := range v {
			n, err := plainNumbers(e)
			if err != nil {
				return nil, err
			}
			v[i] = n
		}
	}
	return v, nil
}

// regoBool evaluates a condition's Rego member: undefined is false.
func (ev *run) regoBool(rp *regoProg) (bool, error) {
	v, err := ev.regoEval(rp)
	if err != nil || v == nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%w: the entrypoint gave %s, not a boolean", ErrRegoResult, typeName(v))
	}
	return b, nil
}

// regoViolations evaluates a validation's Rego member: a boolean (false,
// or undefined, fails with the validation's message) or a set of
// violation messages (any fails, with them, sorted and joined by "; ").
func (ev *run) regoViolations(rp *regoProg) (ok bool, msgs string, err error) {
	v, err := ev.regoEval(rp)
	if err != nil {
		return false, "", err
	}
	switch v := v.(type) {
	case nil:
		return false, "", nil
	case bool:
		return v, "", nil
	case []any:
		out := make([]string, 0, len(v))
		for _, m := range v {
			s, isStr := m.(string)
			if !isStr {
				return false, "", fmt.Errorf("%w: a violation is %s, not a string", ErrRegoResult, typeName(m))
			}
			out = append(out, s)
		}
		sort.Strings(out)
		return len(out) == 0, strings.Join(out, "; "), nil
	}
	return false, "", fmt.Errorf("%w: the entrypoint gave %s, not a boolean or a set of messages", ErrRegoResult, typeName(v))
}

func typeName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case nil:
		return "null"
	case bool:
		return "a boolean"
	}
	return "a number"
}
