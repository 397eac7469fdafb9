package kinds_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/rules"
)

func TestFindingForms(t *testing.T) {
	tests := []struct {
		name       string
		f          kinds.Finding
		text, json string
	}{
		{
			name: "file",
			f:    kinds.Finding{Severity: kinds.SeverityError, Code: "E001", Origin: "a.yaml", Message: "bad", Hint: "fix"},
			text: "a.yaml: error E001: bad",
			json: `{"severity":"error","code":"E001","origin":"a.yaml","message":"bad","hint":"fix"}`,
		},
		{
			name: "rule field column",
			f: kinds.Finding{Severity: kinds.SeverityWarning, Code: "W102", Origin: "a.yaml, document 2", Kind: "ModRule", Rule: "ns/r",
				Field: "spec.match[0].select", Pos: 3, Message: "m"},
			text: "a.yaml, document 2: ModRule ns/r: spec.match[0].select: column 3: warning W102: m",
			json: `{"severity":"warning","code":"W102","origin":"a.yaml, document 2","rule":"ns/r","field":"spec.match[0].select","column":3,"message":"m"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.String(); got != tt.text {
				t.Errorf("text %q, want %q", got, tt.text)
			}
			b, err := json.Marshal(tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.json {
				t.Errorf("json %s, want %s", b, tt.json)
			}
		})
	}
}

func TestCompileFindings(t *testing.T) {
	m := &kinds.Manifest{Origin: "r.yaml, document 1", Object: map[string]any{
		"kind": "Policy", "metadata": map[string]any{"name": "p", "namespace": "shop"}}}
	tests := []struct {
		name string
		err  error
		want []kinds.Finding
	}{
		{
			name: "undecodable",
			err:  errors.New("Policy shop/p: unknown field \"spec.x\""),
			want: []kinds.Finding{{Severity: "error", Code: kinds.CodeUndecodable, Origin: m.Origin, Kind: "Policy", Rule: "shop/p",
				Message: `unknown field "spec.x"`, Hint: "check the field names and types against the kind's reference"}},
		},
		{
			name: "invalid",
			err: &rules.CompileError{Kind: "Policy", Rule: "shop/p", Errors: []rules.FieldError{
				{Field: "spec.a", Pos: -1, Msg: "required"}, {Field: "spec.b", Pos: 4, Msg: "bad"}}},
			want: []kinds.Finding{
				{Severity: "error", Code: kinds.CodeInvalid, Origin: m.Origin, Kind: "Policy", Rule: "shop/p", Field: "spec.a", Message: "required"},
				{Severity: "error", Code: kinds.CodeInvalid, Origin: m.Origin, Kind: "Policy", Rule: "shop/p", Field: "spec.b", Pos: 5, Message: "bad"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, kinds.CompileFindings("Policy", m, tt.err)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
