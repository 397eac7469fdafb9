package modrule

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/jsonpath"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
)

func p[T any](v T) *T { return &v }

func rule(ns, name string, mod func(*v1beta1.ModRuleSpec)) *v1beta1.ModRule {
	mr := &v1beta1.ModRule{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1beta1.ModRuleSpec{
			Type:  v1beta1.ModRuleTypePatch,
			Match: []v1beta1.MatchItem{{Select: "$.kind", MatchValue: p("Pod")}},
			Patch: []v1beta1.PatchOperation{{Operation: "add", Path: "/a", Value: p("1")}},
		},
	}
	if mod != nil {
		mod(&mr.Spec)
	}
	return mr
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*v1beta1.ModRuleSpec)
		want []rules.FieldError // Msg compared as a substring
	}{
		{"select syntax", func(s *v1beta1.ModRuleSpec) {
			s.Match = append(s.Match, v1beta1.MatchItem{}, v1beta1.MatchItem{Select: "$.spec[?(@.x == )]"})
		}, []rules.FieldError{{Field: "spec.match[1].select", Pos: -1, Msg: "Required"}, {Field: "spec.match[2].select", Pos: 16, Msg: "unexpected"}}},
		{"bad regex", func(s *v1beta1.ModRuleSpec) { s.Match[0].MatchValue = nil; s.Match[0].MatchRegex = p("a(b") },
			[]rules.FieldError{{Field: "spec.match[0].matchRegex", Pos: 0, Msg: "missing closing )"}}},
		{"bad target regex", func(s *v1beta1.ModRuleSpec) { s.TargetNamespaceRegex = p("x[") },
			[]rules.FieldError{{Field: "spec.targetNamespaceRegex", Pos: 1, Msg: "missing closing ]"}}},
		{"bad template", func(s *v1beta1.ModRuleSpec) { s.Patch[0].Value = p("{{ .Target") },
			[]rules.FieldError{{Field: "spec.patch[0].value", Pos: -1, Msg: "unclosed action"}}},
		{"bad YAML value", func(s *v1beta1.ModRuleSpec) { s.Patch[0].Value = p("a: [1") },
			[]rules.FieldError{{Field: "spec.patch[0].value", Pos: -1, Msg: "invalid YAML"}}},
		{"path without slash", func(s *v1beta1.ModRuleSpec) { s.Patch[0].Path = "a/b" },
			[]rules.FieldError{{Field: "spec.patch[0].path", Pos: 0, Msg: "must start with '/'"}}},
		{"bad escape in path", func(s *v1beta1.ModRuleSpec) { s.Patch[0].Path = "/a~2" },
			[]rules.FieldError{{Field: "spec.patch[0].path", Pos: -1, Msg: ""}}},
		{"placeholder not captured", func(s *v1beta1.ModRuleSpec) {
			s.Patch[0].Select = p("$.spec.containers[*].ports")
			s.Patch[0].Path = "/spec/containers/#0/ports/#1"
		}, []rules.FieldError{{Field: "spec.patch[0].path", Pos: 26, Msg: "placeholder #1 needs 2 capturing steps"}}},
		{"patch on reject, no message on patch", func(s *v1beta1.ModRuleSpec) { s.Type = v1beta1.ModRuleTypeReject },
			[]rules.FieldError{{Field: "spec.patch", Pos: -1, Msg: "only Patch rules"}}},
		{"reject message on patch", func(s *v1beta1.ModRuleSpec) { s.RejectMessage = p("x") },
			[]rules.FieldError{{Field: "spec.rejectMessage", Pos: -1, Msg: "only Reject rules"}}},
		{"patch rule without patch", func(s *v1beta1.ModRuleSpec) { s.Patch = nil },
			[]rules.FieldError{{Field: "spec.patch", Pos: -1, Msg: "Required"}}},
		{"enums and tier", func(s *v1beta1.ModRuleSpec) {
			s.Type = "Mutate"
			s.ExecutionTier = 40000
			s.AdmissionOperations = []v1beta1.ModRuleAdmissionOperation{"CONNECT"}
			s.Match[0].MatchFor = p(v1beta1.MatchForType("Some"))
			s.Patch = nil
		}, []rules.FieldError{
			{Field: "spec.type", Pos: -1, Msg: "Unsupported value"},
			{Field: "spec.executionTier", Pos: -1, Msg: "between -32767 and 32766"},
			{Field: "spec.admissionOperations[0]", Pos: -1, Msg: "Unsupported value"},
			{Field: "spec.match[0].matchFor", Pos: -1, Msg: "Unsupported value"},
		}},
		{"two matchers", func(s *v1beta1.ModRuleSpec) { s.Match[0].MatchRegex = p("x") },
			[]rules.FieldError{{Field: "spec.match[0]", Pos: -1, Msg: "only one of"}}},
		{"computed patch select", func(s *v1beta1.ModRuleSpec) { s.Patch[0].Select = p("length($.a)") },
			[]rules.FieldError{{Field: "spec.patch[0].select", Pos: 0, Msg: "must be a path"}}},
		{"disabled function", func(s *v1beta1.ModRuleSpec) { s.Patch[0].Value = p(`{{ env "HOME" }}`) },
			[]rules.FieldError{{Field: "spec.patch[0].value", Pos: -1, Msg: "env is disabled"}}},
		{"patch under syntheticRefs", func(s *v1beta1.ModRuleSpec) {
			s.Patch = append(s.Patch,
				v1beta1.PatchOperation{Operation: "add", Path: "/syntheticRefs/namespace/metadata/labels/privileged-allowed", Value: p(`"true"`)},
				v1beta1.PatchOperation{Operation: "remove", Path: "/syntheticRefs"},
				v1beta1.PatchOperation{Operation: "replace", Select: p("$.spec.containers[*]"), Path: "/syntheticRefs/node/#0", Value: p("x")},
				v1beta1.PatchOperation{Operation: "add", Path: "/metadata/syntheticRefs", Value: p("x")},                               // not the top-level member: fine
				v1beta1.PatchOperation{Operation: "add", Select: p("$.spec.containers[*]"), Path: "/syntheticRefs#0/x", Value: p("x")}) // another member
		}, []rules.FieldError{
			{Field: "spec.patch[1].path", Pos: 1, Msg: "under /syntheticRefs"},
			{Field: "spec.patch[2].path", Pos: 1, Msg: "under /syntheticRefs"},
			{Field: "spec.patch[3].path", Pos: 1, Msg: "under /syntheticRefs"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Compile(rule("ns", "r", tt.mod))
			if err == nil {
				t.Fatal("compiled")
			}
			if !errors.Is(err, rules.ErrInvalidRule) || r.Err != err || r.Key != "ns/r" {
				t.Fatalf("err %v, rule %+v", err, r)
			}
			var ce *rules.CompileError
			if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), "ModRule ns/r: ") {
				t.Fatalf("error %q", err)
			}
			if len(ce.Errors) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%s", len(ce.Errors), len(tt.want), err)
			}
			for i, w := range tt.want {
				g := ce.Errors[i]
				if g.Field != w.Field || (w.Pos >= 0 && g.Pos != w.Pos) || !strings.Contains(g.Msg, w.Msg) {
					t.Errorf("error %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestCompileSelectErrorPosition(t *testing.T) {
	_, err := Compile(rule("ns", "r", func(s *v1beta1.ModRuleSpec) { s.Match[0].Select = "$.spec.containers[?(@.x == 1]" }))
	var ce *rules.CompileError
	if !errors.As(err, &ce) {
		t.Fatal(err)
	}
	var se *jsonpath.SyntaxError
	_, perr := jsonpath.Parse("$.spec.containers[?(@.x == 1]")
	if !errors.As(perr, &se) || ce.Errors[0].Pos != se.Pos || !strings.Contains(err.Error(), "column") {
		t.Fatalf("got %v, parser says %v", err, perr)
	}
}

func TestCompileDoesNotModifyInputAndDefaults(t *testing.T) {
	mr := rule("ns", "r", nil)
	before := mr.DeepCopy()
	r, err := Compile(mr)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, mr); diff != "" {
		t.Fatalf("input modified:\n%s", diff)
	}
	if !r.Operations(rules.Create) || !r.Operations(rules.Update) || r.Operations(rules.Delete) {
		t.Error("default operations should be CREATE and UPDATE")
	}
	if r.Criteria[0].All {
		t.Error("default matchFor should be Any")
	}
	if r.Patches[0].StaticValue == nil || !r.Patches[0].Value.Static() {
		t.Error("static value not parsed at load")
	}
}

func TestPinnedKinds(t *testing.T) {
	tests := []struct {
		name  string
		match []v1beta1.MatchItem
		want  []string
	}{
		{"value", []v1beta1.MatchItem{{Select: "$.kind", MatchValue: p("Pod")}}, []string{"Pod"}},
		{"bracket form", []v1beta1.MatchItem{{Select: `$["kind"]`, MatchValues: []string{"Pod", "Job", "Pod"}}}, []string{"Pod", "Job"}},
		{"negated", []v1beta1.MatchItem{{Select: "$.kind", MatchValue: p("Pod"), Negate: true}}, nil},
		{"regex", []v1beta1.MatchItem{{Select: "$.kind", MatchRegex: p("Pod")}}, nil},
		{"other path", []v1beta1.MatchItem{{Select: "$.spec.kind", MatchValue: p("Pod")}}, nil},
		{"intersection", []v1beta1.MatchItem{{Select: "$.kind", MatchValues: []string{"Pod", "Job"}}, {Select: "$.kind", MatchValue: p("Job")}}, []string{"Job"}},
		{"impossible", []v1beta1.MatchItem{{Select: "$.kind", MatchValue: p("Pod")}, {Select: "$.kind", MatchValue: p("Job")}}, []string{}},
	}
	for _, tt := range tests {
		r, err := Compile(rule("ns", "r", func(s *v1beta1.ModRuleSpec) { s.Match = tt.match }))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, r.Kinds()); diff != "" || (tt.want == nil) != (r.Kinds() == nil) {
			t.Errorf("%s: kinds (-want +got):\n%s", tt.name, diff)
		}
	}
}

func keys(rs []engine.Rule) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Info().Key)
	}
	return out
}

func TestSnapshotCandidates(t *testing.T) {
	mk := func(ns, name string, tier int, kind string, ops []v1beta1.ModRuleAdmissionOperation, target *string) *Rule {
		r, err := Compile(rule(ns, name, func(s *v1beta1.ModRuleSpec) {
			s.ExecutionTier = tier
			s.AdmissionOperations = ops
			s.TargetNamespaceRegex = target
			if kind == "" {
				s.Match[0].MatchValue = nil
			} else {
				s.Match[0].MatchValue = p(kind)
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	broken, _ := Compile(rule("a", "broken", func(s *v1beta1.ModRuleSpec) { s.Match[0].Select = "$[" }))
	snap := engine.NewSnapshot([]engine.Rule{
		mk("a", "pod", 0, "Pod", nil, nil),
		mk("a", "any", 0, "", nil, nil),
		mk("a", "early", -5, "Pod", nil, nil),
		mk("a", "delete", 0, "Pod", []v1beta1.ModRuleAdmissionOperation{v1beta1.ModRuleAdmissionOperationDelete}, nil),
		mk("b", "pod", 0, "Pod", nil, nil),
		mk("", "global", 0, "Pod", nil, nil),
		mk("kubemod-system", "cluster", 0, "", nil, nil),
		mk("kubemod-system", "regex", 0, "", nil, p("^a$")),
		mk("kubemod-system", "all", 0, "", nil, p(".*")),
		mk("kubemod-system", "empty", 0, "", nil, p("")),
		broken,
	})
	tests := []struct {
		ns   string
		op   rules.Operation
		kind string
		want []string
	}{
		{"a", rules.Create, "Pod", []string{"a/early", "global", "a/any", "a/pod", "kubemod-system/all", "kubemod-system/regex"}},
		{"a", rules.Create, "Job", []string{"a/any", "kubemod-system/all", "kubemod-system/regex"}},
		{"a", rules.Delete, "Pod", []string{"a/delete"}},
		{"b", rules.Update, "Pod", []string{"global", "b/pod", "kubemod-system/all"}},
		{"c", rules.Create, "Service", []string{"kubemod-system/all"}},
		{"", rules.Create, "Namespace", []string{"kubemod-system/all", "kubemod-system/cluster", "kubemod-system/empty"}},
		{"kubemod-system", rules.Create, "Pod", []string{"global", "kubemod-system/all"}},
	}
	for _, tt := range tests {
		got := keys(snap.Candidates(tt.ns, tt.op, tt.kind, nil))
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Candidates(%q, %s, %q) (-want +got):\n%s", tt.ns, tt.op, tt.kind, diff)
		}
	}
	if diff := cmp.Diff([]string{"a/broken"}, keys(snap.Broken())); diff != "" {
		t.Errorf("broken: %s", diff)
	}
	if snap.Len() != 11 {
		t.Errorf("Len = %d", snap.Len())
	}
}

func TestPathTemplate(t *testing.T) {
	pt, perr := compilePath("/spec/containers/#0/env/x-#1~1y/#2", true)
	if perr != nil {
		t.Fatal(perr.msg)
	}
	got, err := pt.Render([]any{3, "a/b", lang.Path{"c", 1}})
	if err != nil {
		t.Fatal(err)
	}
	want := patch.Pointer{"spec", "containers", "3", "env", "x-a/b/y", "c", "1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := pt.Render([]any{1}); err == nil {
		t.Error("missing key accepted")
	}
	if _, err := Compile(rule("ns", "r", func(s *v1beta1.ModRuleSpec) { s.Patch[0].Path = "/a/#0" })); err == nil || !strings.Contains(err.Error(), "spec.patch[0].path: column 4: placeholder #0 needs a select") {
		t.Errorf("placeholder without select: %v", err)
	}
}
