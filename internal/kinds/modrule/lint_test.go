package modrule_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/source"
)

// lintCode is the part of a finding these tests check.
type lintCode struct {
	Severity, Code, Field string
}

// lintManifest compiles the one ModRule of text through the kind, as lint
// does, and returns its findings: the compile findings of a broken rule,
// else the rule's own.
func lintManifest(t *testing.T, k *modrule.KindAdapter, text string, samples []kinds.Manifest) []kinds.Finding {
	t.Helper()
	docs, err := source.ParseManifest("rules.yaml", []byte(text))
	if err != nil || len(docs) != 1 {
		t.Fatalf("parse: %v (%d documents)", err, len(docs))
	}
	r, err := k.Compile(&docs[0])
	if err != nil {
		return k.CompileFindings(&docs[0], err)
	}
	return r.(kinds.Linter).Lint(context.Background(), docs[0].Origin, samples)
}

func TestLint(t *testing.T) {
	tests := []struct {
		name      string
		clusterNS string
		rule      string
		samples   string
		want      []lintCode
	}{
		{
			name: "clean",
			rule: `{apiVersion: api.kubemod.io/v1beta1, kind: ModRule, metadata: {name: r, namespace: shop},
spec: {type: Patch, match: [{select: '$.kind', matchValue: Pod}, {select: '$.metadata.labels.team', negate: true}],
patch: [{op: add, path: /metadata/labels/team, value: '"x"'}]}}`,
		},
		{
			name: "undecodable",
			rule: `{apiVersion: api.kubemod.io/v1beta1, kind: ModRule, metadata: {name: r}, spec: {type: Patch, bogus: 1}}`,
			want: []lintCode{{"error", "E002", "spec.bogus"}},
		},
		{
			name: "invalid and placeholder",
			rule: `{apiVersion: api.kubemod.io/v1beta1, kind: ModRule, metadata: {name: r},
spec: {type: Patch, match: [{select: '$.kind', matchRegex: '('}], patch: [{op: add, path: '/metadata/labels/#0', value: '"x"'}]}}`,
			want: []lintCode{{"error", "E003", "spec.match[0].matchRegex"}, {"error", "E004", "spec.patch[0].path"}},
		},
		{
			name: "not idempotent",
			rule: `{apiVersion: api.kubemod.io/v1beta1, kind: ModRule, metadata: {name: r, namespace: shop},
spec: {type: Patch, match: [{select: '$.kind', matchValue: Pod}], patch: [{op: add, path: /spec/containers/-1, value: '{name: s, image: s}'}]}}`,
			want: []lintCode{{"warning", "W101", "spec.patch"}},
		},
		{
			name: "boolean select, quoted value, kinds never",
			rule: `{apiVersion: api.kubemod.io/v1beta1, kind: ModRule, metadata: {name: r},
spec: {type: Reject, match: [{select: '$.kind', matchValue: Pod}, {select: '$.kind', matchValue: Service},
{select: '$.spec.replicas > 1', matchValue: 'true'}, {select: '$.metadata.name', matchValue: '"x"'}]}}`,
			want: []lintCode{{"warning", "W102", "spec.match[2].select"}, {"warning", "W103", "spec.match[3].matchValue"}, {"warning", "W105", "spec.match"}},
		},
		{
			name: "cluster rule for namespaced kinds",
			rule: `{apiVersion: api.kubemod.io/v1beta1, kind: ModRule, metadata: {name: r, namespace: kubemod-system},
spec: {type: Reject, match: [{select: '$.kind', matchValues: [Pod, Namespace]}]}}`,
			want: []lintCode{{"warning", "W104", "spec.targetNamespaceRegex"}},
		},
		{
			name:      "another cluster-rules namespace",
			clusterNS: "other",
			rule: `{apiVersion: api.kubemod.io/v1beta1, kind: ModRule, metadata: {name: r, namespace: kubemod-system},
spec: {type: Reject, match: [{select: '$.kind', matchValues: [Pod, Namespace]}]}}`,
		},
		{
			name: "labels not strings, no value",
			rule: `{apiVersion: api.kubemod.io/v1beta1, kind: ModRule, metadata: {name: r, namespace: shop},
spec: {type: Patch, match: [{select: '$.kind', matchValue: Pod}],
patch: [{op: add, path: /metadata/labels/a, value: 'true'}, {op: add, path: /metadata/labels/b, value: '"{{ .Target.metadata.nope }}"'}]}}`,
			want: []lintCode{{"warning", "W107", "spec.patch[0].value"}, {"warning", "W108", "spec.patch[1].value"}},
		},
		{
			name: "template limit",
			rule: `{apiVersion: api.kubemod.io/v1beta1, kind: ModRule, metadata: {name: r, namespace: shop},
spec: {type: Patch, match: [{select: '$.kind', matchValue: Pod}], patch: [{op: add, path: /metadata/annotations/a, value: '"{{ repeat 3000000 "x" }}"'}]}}`,
			want: []lintCode{{"error", "E006", "spec.patch[0].value"}},
		},
		{
			name: "boolean on a given sample",
			rule: `{apiVersion: api.kubemod.io/v1beta1, kind: ModRule, metadata: {name: r},
spec: {type: Reject, match: [{select: '$.spec.hostNetwork', matchValue: 'false'}]}}`,
			samples: `{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {hostNetwork: true}}`,
			want:    []lintCode{{"warning", "W102", "spec.match[0].select"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var samples []kinds.Manifest
			if tt.samples != "" {
				var err error
				if samples, err = source.ParseManifest("samples.yaml", []byte(tt.samples)); err != nil {
					t.Fatal(err)
				}
			}
			var got []lintCode
			for _, f := range lintManifest(t, modrule.NewKind(tt.clusterNS), tt.rule, samples) {
				if f.Kind != "ModRule" || f.Origin != "rules.yaml:1" || f.Rule == "" || f.Message == "" {
					t.Errorf("finding without kind, origin, rule or message: %+v", f)
				}
				got = append(got, lintCode{f.Severity, f.Code, f.Field})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLintBrokenRule: a rule that did not compile lints to nothing (its
// compile findings report it).
func TestLintBrokenRule(t *testing.T) {
	docs, err := source.ParseManifest("rules.yaml", []byte(`{apiVersion: api.kubemod.io/v1beta1, kind: ModRule, metadata: {name: r}, spec: {type: Reject, match: [{select: '$[', matchValue: x}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := modrule.NewKind("").Compile(&docs[0])
	if err == nil {
		t.Fatal("compiled")
	}
	if got := r.(kinds.Linter).Lint(context.Background(), "rules.yaml", nil); got != nil {
		t.Errorf("findings %v", got)
	}
}
