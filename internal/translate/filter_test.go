package translate

import (
	"context"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/jsonpath"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
	"github.com/modwright/modwright/internal/value"
)

// filterElements are the elements the differential test filters: every
// JSON type, numbers of both kinds, strings that compare around each
// other.
var filterElements = []string{
	`{"name": "app", "image": "registry.corp/app:1", "port": 80, "ratio": 0.5, "on": true, "tags": ["a"], "env": {"A": "1"}}`,
	`{"name": "sidecar", "image": "envoy", "port": 8080.0, "ratio": 2, "on": false, "tags": [], "env": {}}`,
	`{"name": "web", "image": "nginx:latest", "port": "80", "on": null}`,
	`{"name": 7, "image": ["x"], "port": {"n": 1}}`,
	`{"name": ""}`,
	`{}`,
	`"app"`, `80`, `2.5`, `true`, `null`, `[1, 2]`,
}

// filterCases are filters the translation takes.
var filterCases = []string{
	`@.name == "app"`, `@.name != "app"`, `@ == "app"`, `@ == 80`, `@.port == 80`, `@.port != 80`,
	`@.port > 79`, `@.port >= 8080`, `@.port < 81.5`, `@.ratio <= 0.5`, `@.name > "sidecar"`, `@.name < "b"`,
	`@.image =~ "^registry\\.corp/"`, `@.image !~ "latest$"`, `@ =~ "pp"`,
	`@.on`, `@.on == true`, `@.on == null`, `!@.on`, `@.tags`, `@.tags == @.tags`, `@.env != $.metadata`,
	`@.name == "app" && @.port == 80`, `@.name == "web" || @.port > 100`, `!(@.name == "app")`,
	`isDefined(@.port)`, `isUndefined(@.image)`, `isEmpty(@.tags)`, `isNotEmpty(@.env)`, `isEmpty(@.name)`,
	`@.name == $.metadata.name`, `@.tags[0] == "a"`, `@.tags[-1] == "a"`, `true`, `false`,
}

// TestFilterCond compares each translated filter, evaluated as CEL, with
// the filter itself on every element: they must keep the same elements.
func TestFilterCond(t *testing.T) {
	root := map[string]any{"metadata": map[string]any{"name": "app"}}
	env := &lang.Env{Name: "filter", Vars: []lang.Var{{Name: "e0"}, {Name: "object"}}}
	n := 0
	for _, f := range filterCases {
		e, err := jsonpath.Parse("$[?(" + f + ")]")
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		cond, err := filterCond(e.Tree().Steps[0].Filter, "e0", "object")
		if err != nil {
			t.Fatalf("%s: not translated: %v", f, err)
		}
		prg, ds := cel.Language{}.CompileExpr(env, cond)
		if ds != nil {
			t.Fatalf("%s: its CEL %s: %v", f, cond, ds)
		}
		for _, el := range filterElements {
			elem, err := value.Decode([]byte(el))
			if err != nil {
				t.Fatal(err)
			}
			// Objects as the API server holds them (and gives them to both
			// the webhook and its policies): no null members.
			elem = withoutNullMembers(elem)
			want, err := keeps(e, elem, root)
			if err != nil {
				continue // the filter fails: the criterion does not hold either way
			}
			got, err := prg.EvalBool(context.Background(), &lang.Activation{Object: root, Vars: map[string]any{"e0": elem}})
			if err != nil {
				t.Errorf("%s on %s: CEL %s: %v", f, el, cond, err)
				continue
			}
			if got != want {
				t.Errorf("%s on %s: the filter keeps it: %v, CEL %s: %v", f, el, want, cond, got)
			}
			n++
		}
	}
	t.Logf("%d comparisons", n)
}

// keeps reports whether the filter of e ($[?(...)] over [elem], with
// root's members under $) keeps elem.
func keeps(e *jsonpath.Expr, elem any, root map[string]any) (bool, error) {
	doc := map[string]any{}
	for k, v := range root {
		doc[k] = v
	}
	// $ is the document: filter a one-element list placed under a key
	// the filters do not read, with the root's members beside it.
	src := strings.Replace(e.Source(), "$[?(", "$.__items[?(", 1)
	doc["__items"] = []any{elem}
	q, err := jsonpath.Parse(src)
	if err != nil {
		return false, err
	}
	res, err := q.Evaluate(context.Background(), doc)
	if err != nil {
		return false, err
	}
	return len(res.Values) == 1, nil
}

// withoutNullMembers is v without the null members of its objects.
func withoutNullMembers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if e != nil {
				out[k] = withoutNullMembers(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = withoutNullMembers(e)
		}
		return out
	}
	return v
}

// TestFilterCondRefuses: what may fail or select several values is not
// translated.
func TestFilterCondRefuses(t *testing.T) {
	for _, f := range []string{`@.port + 1 > 2`, `length(@.tags) > 0`, `@.tags[*] == "a"`, `"x"`, `-@.port < 0`, `@..name == "a"`} {
		e, err := jsonpath.Parse("$[?(" + f + ")]")
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c, err := filterCond(e.Tree().Steps[0].Filter, "e0", "object"); err == nil {
			t.Errorf("%s translated: %s", f, c)
		}
	}
}

// FuzzFilterCond is TestFilterCond over any filter and element: a filter
// that translates decides as its translation does.
func FuzzFilterCond(f *testing.F) {
	for _, c := range filterCases {
		f.Add(c, filterElements[0])
	}
	for _, el := range filterElements {
		f.Add(`@.port >= 80`, el)
	}
	root := map[string]any{"metadata": map[string]any{"name": "app"}}
	env := &lang.Env{Name: "filter", Vars: []lang.Var{{Name: "e0"}, {Name: "object"}}}
	f.Fuzz(func(t *testing.T, filter, el string) {
		e, err := jsonpath.Parse("$[?(" + filter + ")]")
		if err != nil || !e.IsQuery() || len(e.Tree().Steps) != 1 || e.Tree().Steps[0].Kind != jsonpath.StepFilter {
			return
		}
		elem, err := value.Decode([]byte(el))
		if err != nil {
			return
		}
		elem = withoutNullMembers(elem)
		cond, err := filterCond(e.Tree().Steps[0].Filter, "e0", "object")
		if err != nil {
			return
		}
		want, err := keeps(e, elem, root)
		if err != nil {
			return
		}
		prg, ds := cel.Language{}.CompileExpr(env, cond)
		if ds != nil {
			t.Fatalf("%s: its CEL %s: %v", filter, cond, ds)
		}
		got, err := prg.EvalBool(context.Background(), &lang.Activation{Object: root, Vars: map[string]any{"e0": elem}})
		if err != nil {
			t.Fatalf("%s on %s: CEL %s: %v", filter, el, cond, err)
		}
		if got != want {
			t.Fatalf("%s on %s: the filter keeps it: %v, CEL %s: %v", filter, el, want, cond, got)
		}
	})
}
