package kyverno

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// A GeneratingPolicy's generate entry may be a YAML template rather than an
// expression: one or more documents, each an object to generate. With
// interpolate: cel, a scalar holding (( expression )) placeholders is
// computed when the policy runs, over the same variables as the
// expressions: a scalar that is one placeholder alone becomes the
// expression's value, whatever its type (an object, a list, a number);
// placeholders within a longer string are written into it and must give
// scalars. \(( writes a literal ((. Placeholders are not allowed in keys.
// Each object goes where its metadata.namespace says, as generator.Apply
// places them (a namespaced policy's in its own namespace).

// tmplNode is a compiled part of a template document.
type tmplNode interface {
	render(ctx context.Context, act *lang.Activation) (any, error)
}

type (
	// tmplLiteral is a subtree without placeholders (copied at each render:
	// the generated objects are changed afterwards).
	tmplLiteral struct{ v any }
	tmplMapping struct {
		keys []string
		vals []tmplNode
	}
	tmplSequence struct{ items []tmplNode }
	// tmplSplice is a scalar that is one placeholder alone.
	tmplSplice struct {
		src  string
		prog *cel.Program
	}
	// tmplString is a scalar of literal parts and placeholders: parts[i]
	// is literal where progs[i] is nil.
	tmplString struct {
		parts []string
		progs []*cel.Program
	}
)

func (t tmplLiteral) render(context.Context, *lang.Activation) (any, error) {
	return value.DeepCopy(t.v), nil
}

func (t *tmplMapping) render(ctx context.Context, act *lang.Activation) (any, error) {
	out := make(map[string]any, len(t.keys))
	for i, k := range t.keys {
		v, err := t.vals[i].render(ctx, act)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

func (t *tmplSequence) render(ctx context.Context, act *lang.Activation) (any, error) {
	out := make([]any, 0, len(t.items))
	for i, it := range t.items {
		v, err := it.render(ctx, act)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func (t *tmplSplice) render(ctx context.Context, act *lang.Activation) (any, error) {
	v, err := t.prog.Eval(ctx, act)
	if err != nil {
		return nil, fmt.Errorf("placeholder %q: %w", t.src, err)
	}
	return v, nil
}

func (t *tmplString) render(ctx context.Context, act *lang.Activation) (any, error) {
	var b strings.Builder
	for i, p := range t.progs {
		if p == nil {
			b.WriteString(t.parts[i])
			continue
		}
		v, err := p.Eval(ctx, act)
		if err != nil {
			return nil, fmt.Errorf("placeholder %q: %w", t.parts[i], err)
		}
		switch v := v.(type) {
		case string:
			b.WriteString(v)
		case bool, json.Number:
			fmt.Fprint(&b, v)
		default:
			return nil, fmt.Errorf("placeholder %q within a string gives a %s, not a scalar: make it the whole value to place a structure", t.parts[i], value.TypeName(v))
		}
		if b.Len() > maxTemplateString {
			return nil, fmt.Errorf("a string of more than %d bytes", maxTemplateString)
		}
	}
	return b.String(), nil
}

// errPlaceholder: a placeholder did not compile (its diagnostics are
// reported with the policy's errors).
var errPlaceholder = errors.New("a placeholder does not compile")

// maxTemplateString bounds a string a template writes placeholders into.
const maxTemplateString = 1 << 20

// gpolTemplate is a compiled template: its documents.
type gpolTemplate struct {
	docs []tmplNode
}

// render makes the template's objects.
func (t *gpolTemplate) render(ctx context.Context, act *lang.Activation) ([]map[string]any, error) {
	out := make([]map[string]any, 0, len(t.docs))
	for i, d := range t.docs {
		v, err := d.render(ctx, act)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("document %d: a %s, not an object to generate", i+1, value.TypeName(v))
		}
		out = append(out, obj)
	}
	return out, nil
}

// templateCompiler compiles one template's placeholders.
type templateCompiler struct {
	c           *compiler
	field       string
	interpolate bool
	// has memoizes hasPlaceholder: each node is looked at once.
	has map[*yaml.Node]bool
}

// compileTemplate compiles a generate entry's template (at field); errors
// are the policy's, at field.value with the line.
func (c *compiler) compileTemplate(field, src, interpolate string) *gpolTemplate {
	switch interpolate {
	case "", "none", "cel":
	default:
		c.errf(field+".interpolate", "unsupported value %q: cel or none", interpolate)
		return nil
	}
	tc := &templateCompiler{c: c, field: field + ".value", interpolate: interpolate == "cel", has: map[*yaml.Node]bool{}}
	t := &gpolTemplate{}
	dec := yaml.NewDecoder(strings.NewReader(src))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if !errors.Is(err, io.EOF) {
				c.errf(tc.field, "the template is not YAML: %v", err)
				return nil
			}
			break
		}
		root := &doc
		if root.Kind == yaml.DocumentNode {
			if len(root.Content) == 0 {
				continue
			}
			root = root.Content[0]
		}
		if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
			continue
		}
		n, err := tc.node(root)
		if err != nil {
			if !errors.Is(err, errPlaceholder) {
				c.errf(tc.field, "%v", err)
			}
			return nil
		}
		switch n := n.(type) {
		case *tmplMapping, *tmplSplice:
		case tmplLiteral:
			if _, ok := n.v.(map[string]any); ok {
				break
			}
			c.errf(tc.field, "line %d: a document is an object to generate, not a %s", root.Line, value.TypeName(n.v))
			return nil
		default:
			c.errf(tc.field, "line %d: a document is an object to generate", root.Line)
			return nil
		}
		t.docs = append(t.docs, n)
	}
	if len(t.docs) == 0 {
		c.errf(tc.field, "a template needs at least one document")
		return nil
	}
	return t
}

// node compiles a YAML node: a subtree without placeholders is a literal
// (decoded by the YAML library, whose alias bounds hold). Where
// placeholders are, aliases are refused: followed, a few nested ones would
// make the compiled tree grow exponentially.
func (tc *templateCompiler) node(n *yaml.Node) (tmplNode, error) {
	if !tc.interpolate || !tc.hasPlaceholder(n) {
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %v", n.Line, err)
		}
		j, err := yamlJSON(v)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", n.Line, err)
		}
		return tmplLiteral{j}, nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := &tmplMapping{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch {
			case k.Kind != yaml.ScalarNode:
				return nil, fmt.Errorf("line %d: keys are strings", k.Line)
			case strings.Contains(k.Value, "(("):
				return nil, fmt.Errorf("line %d: placeholders are not allowed in keys; place the whole map instead (labels: (( variables.labels )))", k.Line)
			case k.Value == "<<":
				return nil, fmt.Errorf("line %d: merge keys are not allowed where placeholders are", k.Line)
			}
			vn, err := tc.node(v)
			if err != nil {
				return nil, err
			}
			m.keys, m.vals = append(m.keys, k.Value), append(m.vals, vn)
		}
		return m, nil
	case yaml.SequenceNode:
		s := &tmplSequence{}
		for _, it := range n.Content {
			in, err := tc.node(it)
			if err != nil {
				return nil, err
			}
			s.items = append(s.items, in)
		}
		return s, nil
	case yaml.ScalarNode:
		return tc.scalar(n)
	case yaml.AliasNode:
		return nil, fmt.Errorf("line %d: YAML aliases are not allowed where placeholders are", n.Line)
	}
	return nil, fmt.Errorf("line %d: an unsupported YAML node", n.Line)
}

// scalar compiles a scalar with placeholders (or escapes).
func (tc *templateCompiler) scalar(n *yaml.Node) (tmplNode, error) {
	parts, exprs, err := scanPlaceholders(n.Value)
	if err != nil {
		return nil, fmt.Errorf("line %d: %v", n.Line, err)
	}
	count := 0
	for _, e := range exprs {
		if e {
			count++
		}
	}
	if count == 0 {
		return tmplLiteral{strings.Join(parts, "")}, nil
	}
	progs := make([]*cel.Program, len(parts))
	for i, p := range parts {
		if !exprs[i] {
			continue
		}
		f := fmt.Sprintf("%s (line %d: %s)", tc.field, n.Line, p)
		prog, ds := tc.c.celLanguage().CompileExpr(gpolEnv(tc.c, f), p)
		for _, d := range ds {
			tc.c.ce.Errors = append(tc.c.ce.Errors, rules.FieldError{Field: f, Pos: d.Pos, Msg: d.Msg})
		}
		if prog == nil {
			return nil, errPlaceholder // its diagnostics are the policy's errors already
		}
		tc.c.noteReads(prog)
		progs[i] = prog
	}
	if count == 1 && len(parts) == 1 {
		return &tmplSplice{src: parts[0], prog: progs[0]}, nil
	}
	return &tmplString{parts: parts, progs: progs}, nil
}

// yamlJSON is a decoded YAML value as a JSON tree (numbers as
// json.Number, as every object the engine holds).
func yamlJSON(v any) (any, error) {
	switch v := v.(type) {
	case nil, bool, string:
		return v, nil
	case int:
		return json.Number(strconv.Itoa(v)), nil
	case int64:
		return json.Number(strconv.FormatInt(v, 10)), nil
	case uint64:
		return json.Number(strconv.FormatUint(v, 10)), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%v has no JSON form", v)
		}
		return json.Number(strconv.FormatFloat(v, 'g', -1, 64)), nil
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano), nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			j, err := yamlJSON(e)
			if err != nil {
				return nil, err
			}
			out[i] = j
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			j, err := yamlJSON(e)
			if err != nil {
				return nil, err
			}
			out[k] = j
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("a key %v that is not a string", k)
			}
			j, err := yamlJSON(e)
			if err != nil {
				return nil, err
			}
			out[ks] = j
		}
		return out, nil
	}
	return nil, fmt.Errorf("a YAML value of type %T", v)
}

// hasPlaceholder reports whether a subtree holds a placeholder or an
// escape (an alias: whether its anchor's does), each node computed once.
func (tc *templateCompiler) hasPlaceholder(n *yaml.Node) bool {
	if v, ok := tc.has[n]; ok {
		return v
	}
	tc.has[n] = false // an alias cycle ends here
	v := false
	switch {
	case n.Kind == yaml.AliasNode && n.Alias != nil:
		v = tc.hasPlaceholder(n.Alias)
	case n.Kind == yaml.ScalarNode:
		v = strings.Contains(n.Value, "((")
	}
	for _, c := range n.Content {
		if tc.hasPlaceholder(c) {
			v = true
		}
	}
	tc.has[n] = v
	return v
}

// scanPlaceholders splits a scalar into literal parts and (( expression ))
// placeholders (exprs[i] says which), the expressions trimmed. A
// placeholder ends at the first )) outside parentheses and CEL string
// literals; \(( is a literal ((.
func scanPlaceholders(s string) (parts []string, exprs []bool, err error) {
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			parts, exprs = append(parts, lit.String()), append(exprs, false)
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], `\((`):
			lit.WriteString("((")
			i += 3
		case strings.HasPrefix(s[i:], "(("):
			end, err := placeholderEnd(s, i+2)
			if err != nil {
				return nil, nil, err
			}
			expr := strings.TrimSpace(s[i+2 : end])
			if expr == "" {
				return nil, nil, fmt.Errorf("an empty placeholder at offset %d", i)
			}
			flush()
			parts, exprs = append(parts, expr), append(exprs, true)
			i = end + 2
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	flush()
	return parts, exprs, nil
}

// placeholderEnd is the offset of the )) that closes the placeholder whose
// expression starts at from.
func placeholderEnd(s string, from int) (int, error) {
	depth := 0
	var quote byte
	for i := from; i < len(s); i++ {
		c := s[i]
		if quote != 0 {
			switch c {
			case '\\':
				i++
			case quote:
				quote = 0
			}
			continue
		}
		switch c {
		case '"', '\'':
			quote = c
		case '(':
			depth++
		case ')':
			switch {
			case depth > 0:
				depth--
			case i+1 < len(s) && s[i+1] == ')':
				return i, nil
			default:
				return 0, fmt.Errorf("an unbalanced ) in the placeholder at offset %d", from-2)
			}
		}
	}
	if quote != 0 {
		return 0, fmt.Errorf("an unterminated string in the placeholder at offset %d", from-2)
	}
	return 0, fmt.Errorf("the placeholder at offset %d has no closing ))", from-2)
}
