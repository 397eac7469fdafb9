package crdschema_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	apiservercel "k8s.io/apiserver/pkg/cel"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
)

// widget is an object of testdata/crd/widgets.yaml's kind, numbers as
// json.Number (as the engine's documents hold them).
func widget(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(`{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": {"name": "w", "namespace": "ns", "labels": {"a": "b"}},
		"spec": {"size": "small", "minReplicas": 1, "maxReplicas": 3, "x-mode": "fast",
			"ports": [{"name": "http", "port": 8080}, {"name": "admin", "port": 9090}],
			"tags": ["a", "b"]}}`))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSelf checks that a value bound as Self gives is typed as the API
// server types a CRD rule's self at that place: escaped property names,
// set and map lists, the metadata a rule can read, and that a
// dynamically typed expression reads it so.
func TestSelf(t *testing.T) {
	v := widgets(t).For("example.com/v1", "Widget")
	obj := widget(t)
	at := func(path ...any) any {
		var cur any = obj
		for _, k := range path {
			switch k := k.(type) {
			case string:
				cur = cur.(map[string]any)[k]
			case int:
				cur = cur.([]any)[k]
			}
		}
		return cur
	}
	env := &lang.Env{Name: "test", Vars: []lang.Var{{Name: "self"}, {Name: "oldSelf"}}}
	tests := []struct {
		path []any
		expr string
		want any
	}{
		{nil, "self.metadata.name == 'w' && self.kind == 'Widget'", true},
		{nil, "has(self.metadata.labels)", false}, // not declared for CEL at the root
		{nil, "has(self.metadata.namespace)", false},
		{[]any{"spec"}, "self.x__dash__mode", "fast"},
		{[]any{"spec"}, "has(self.x__dash__mode) && !has(self.x_mode)", true},
		{[]any{"spec"}, "self.maxReplicas - self.minReplicas", int64(2)},
		{[]any{"spec", "tags"}, "self == ['b', 'a']", true}, // a set: order does not matter
		{[]any{"spec", "tags"}, "self + ['a', 'c']", []any{"a", "b", "c"}},
		{[]any{"spec", "ports"}, "self == oldSelf", true},
		{[]any{"spec", "ports", 1}, "self.port", int64(9090)},
	}
	for _, tt := range tests {
		p, ds := cel.Language{}.CompileExpr(env, tt.expr)
		if ds != nil {
			t.Fatalf("%s: %v", tt.expr, ds)
		}
		self, ok := v.Self(tt.path, at(tt.path...))
		if !ok {
			t.Fatalf("Self(%v): not ok", tt.path)
		}
		vars := map[string]any{}
		if tt.path != nil && tt.path[len(tt.path)-1] == "ports" {
			// The old list in another order: equal as a map list.
			l := at(tt.path...).([]any)
			old, _ := v.Self(tt.path, []any{l[1], l[0]})
			vars["oldSelf"] = old
		}
		got, err := p.Eval(context.Background(), &lang.Activation{Item: self, Vars: vars})
		if err != nil {
			t.Errorf("%v %s: %v", tt.path, tt.expr, err)
			continue
		}
		if !equalJSON(got, tt.want) {
			t.Errorf("%v %s = %#v, want %#v", tt.path, tt.expr, got, tt.want)
		}
	}
	for _, path := range [][]any{{"status", "other"}, {"spec", "size", 0}, {"nope"}} {
		if _, ok := v.Self(path, "x"); ok {
			t.Errorf("Self(%v): ok, the schema does not type it", path)
		}
	}
}

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestSelfType checks that an expression type-checked against SelfType
// is refused as the API server refuses a CRD rule there.
func TestSelfType(t *testing.T) {
	v := widgets(t).For("example.com/v1", "Widget")
	env := &lang.Env{Name: "test", Vars: []lang.Var{{Name: "self"}, {Name: "oldSelf"}, {Name: "object"}}}
	tests := []struct {
		pattern []any
		expr    string
		err     string // "" when it compiles
	}{
		{nil, "self.metadata.name != ''", ""},
		{nil, "self.metadata.labels.size() > 0", "undefined field 'labels'"},
		{[]any{"spec"}, "self.x__dash__mode == 'fast'", ""},
		{[]any{"spec"}, "self.mode == 'fast'", "undefined field 'mode'"},
		{[]any{"spec"}, "self.size == 1", "found no matching overload for '_==_'"},
		{[]any{"spec", "ports", nil}, "self.port > 1024 && object.spec.size == 'x'", ""},
		{[]any{"spec", "tags", 0}, "self.startsWith('a')", ""},
	}
	for _, tt := range tests {
		dt, ok := v.SelfType(tt.pattern)
		if !ok {
			t.Fatalf("SelfType(%v): not ok", tt.pattern)
		}
		_, ds := cel.Language{}.CompileTyped(env, tt.expr, map[string]*apiservercel.DeclType{"self": dt, "oldSelf": dt})
		var got string
		if ds != nil {
			got = ds[0].Msg
		}
		if (tt.err == "") != (got == "") || !strings.Contains(got, tt.err) {
			t.Errorf("%v %s: got %q, want %q", tt.pattern, tt.expr, got, tt.err)
		}
	}
	if _, ok := v.SelfType([]any{"spec", "nope"}); ok {
		t.Error("SelfType of an undeclared property: ok")
	}
}
