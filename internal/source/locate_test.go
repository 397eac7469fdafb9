package source

import (
	"fmt"
	"strings"
	"testing"
)

func TestLocate(t *testing.T) {
	text := `# rules
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata:
  name: r
spec:
  type: Patch
  match:
    - select: '$.kind'
      matchValue: Pod
    - select: $.spec.containers[*].image
  patch:
    - op: add
      path: /metadata/labels/x
      value: |
        line one
        {{ .Target.bad }}
---
{"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
]}
`
	docs, err := ParseManifest("rules.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 3 {
		t.Fatalf("%d documents", len(docs))
	}
	for _, tc := range []struct {
		doc       int
		field     string
		pos       int
		line, col int
	}{
		{0, "", -1, 2, 1},
		{0, "metadata.name", -1, 4, 18},
		{1, "spec.match[0].select", -1, 13, 15},
		{1, "spec.match[0].select", 2, 13, 18},  // after the quote
		{1, "spec.match[1].select", 6, 15, 21},  // plain
		{1, "spec.patch[0].value", 12, 21, 12},  // a block: its second line
		{1, "spec.match[0].missing", -1, 13, 7}, // the nearest ancestor (an item)
		{1, "spec.bogus", -1, 10, 1},            // a mapping: its key
		{2, "metadata.name", -1, 24, 63},        // a List's item
	} {
		line, col, ok := Locate(&docs[tc.doc], tc.field, tc.pos)
		if !ok || line != tc.line || col != tc.col {
			t.Errorf("document %d %s at %d: %d:%d (%v), want %d:%d", tc.doc+1, tc.field, tc.pos, line, col, ok, tc.line, tc.col)
		}
	}
	if _, _, ok := Locate(&Document{}, "spec", -1); ok {
		t.Error("a document without text located")
	}
}

// TestDocumentLines: every document of a long file knows its first line
// (counted once through the file, not again for each document).
func TestDocumentLines(t *testing.T) {
	var b strings.Builder
	const n = 5000
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%d}\n", i)
	}
	docs, err := ParseManifest("many.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != n {
		t.Fatalf("%d documents", len(docs))
	}
	for i := range docs {
		if line, _, ok := Locate(&docs[i], "metadata.name", -1); !ok || line != 4*i+4 {
			t.Fatalf("document %d: metadata.name on line %d (%v), want %d", i+1, line, ok, 4*i+4)
		}
	}
}

// TestLocatorParsesOnce: the items of a List share its text, which a
// Locator parses once however many items it locates fields of, and each
// item's field is still found in its own item.
func TestLocatorParsesOnce(t *testing.T) {
	docs, err := ParseManifest("l.yaml", []byte(brokenList(50)))
	if err != nil {
		t.Fatal(err)
	}
	var l Locator
	for i := range docs {
		line, _, ok := l.Locate(&docs[i], "spec.match", -1)
		// Items of 6 lines from line 4; match is an item's sixth.
		if want := 4 + 6*i + 5; !ok || line != want {
			t.Fatalf("item %d: line %d (ok %v), want %d", i, line, ok, want)
		}
	}
	if len(l.roots) != 1 {
		t.Errorf("%d texts parsed for one List, want 1", len(l.roots))
	}
}

// brokenList is a List of n ModRules, each undecodable: spec.match is a
// string, not a list of criteria.
func brokenList(n int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: List\nitems:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "- apiVersion: api.kubemod.io/v1beta1\n  kind: ModRule\n  metadata: {name: r%d, namespace: ns}\n  spec:\n    type: Patch\n    match: not-a-list\n", i)
	}
	return b.String()
}

// BenchmarkLoadBrokenList loads a List of 2,000 undecodable ModRules: each
// error is located in the List's text (Where), which is parsed once.
func BenchmarkLoadBrokenList(b *testing.B) {
	docs, err := ParseManifest("l.yaml", []byte(brokenList(2000)))
	if err != nil {
		b.Fatal(err)
	}
	reg := testKinds()
	b.ReportAllocs()
	for b.Loop() {
		if res := LoadRules(docs, reg); len(res.Errors) != 2000 {
			b.Fatalf("%d errors", len(res.Errors))
		}
	}
}
