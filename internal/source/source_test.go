package source

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/rules"
)

func TestParseManifest(t *testing.T) {
	in := `# only a comment
---
apiVersion: v1
kind: List
items:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: x}}
---
---
{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"port": 1.50}}
`
	docs, err := ParseManifest("in.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range docs {
		got = append(got, d.Origin+" "+d.Kind()+" "+d.Namespace()+"/"+d.Name())
	}
	want := []string{
		"in.yaml:3, item 1 ConfigMap /a",
		"in.yaml:3, item 2 ConfigMap x/b",
		"in.yaml:9 Service /s",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if string(docs[2].JSON) != `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"port":1.50}}` {
		t.Errorf("number text not kept: %s", docs[2].JSON)
	}
}

func TestParseManifestErrors(t *testing.T) {
	for in, want := range map[string]string{
		"a: [1":                         "in.yaml:1: did not find expected ',' or ']'",
		"---\nkind: X\n---\n- 1\n":      "in.yaml:4: expected an object",
		"metadata: {name: x}\n":         "has no kind",
		"kind: List\nitems: [1]\n":      "item 1: expected an object",
		"kind: X\n---\nkind: Y\nb: [\n": "in.yaml:4: did not find expected node content",
	} {
		_, err := ParseManifest("in.yaml", []byte(in))
		if !errors.Is(err, ErrInvalidManifest) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to contain %q", in, err, want)
		}
	}
}

func TestReadPathsDirectory(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "b.yaml"), []byte("kind: B\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "sub", "a.json"), []byte(`{"kind":"A"}`), 0o644))
	must(os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("kind: Ignored\n"), 0o644))
	docs, err := ReadPaths([]string{dir, "-"}, strings.NewReader("kind: C\n"))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, d := range docs {
		kinds = append(kinds, d.Kind())
	}
	if diff := cmp.Diff([]string{"B", "A", "C"}, kinds); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := ReadPaths([]string{filepath.Join(dir, "missing")}, nil); !errors.Is(err, ErrInvalidManifest) {
		t.Errorf("missing path: %v", err)
	}
}

func TestLoadRules(t *testing.T) {
	docs, err := ParseManifest("rules.yaml", []byte(`
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: ok, namespace: ns}
spec:
  type: Reject
  match: [{select: '$.kind'}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: typo, namespace: ns}
spec:
  type: Reject
  matches: [{select: '$.kind'}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: bad, namespace: ns}
spec:
  type: Reject
  match: [{select: '$.kind[', matchValue: 1}]
---
apiVersion: api.kubemod.io/v1beta1
kind: ModRule
metadata: {name: broken, namespace: ns}
spec:
  type: Reject
  match: [{select: '$.kind['}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
---
apiVersion: api.kubemod.io/v1alpha1
kind: ModRule
metadata: {name: old}
`))
	if err != nil {
		t.Fatal(err)
	}
	res := LoadRules(docs, testKinds())
	if len(res.Rules) != 2 || res.Rules[0].Info().Key != "ns/ok" || res.Rules[1].Info().Err == nil {
		t.Fatalf("rules: %+v", res.Rules)
	}
	if len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0], "rules.yaml:30: v1 ConfigMap \"cm\" is not a rule of a kind served here (api.kubemod.io/v1beta1 ModRule") {
		t.Errorf("skipped: %v", res.Skipped)
	}
	wants := []string{
		`rules.yaml:14:3: ModRule ns/typo: spec.matches: unknown field`,
		`rules.yaml:21:43: ModRule ns/bad: spec.match[0].matchValue: must be a string, not a number (1)`,
		`rules.yaml:28:28: ModRule ns/broken: spec.match[0].select: column 8:`,
		`rules.yaml:34:13: ModRule old: apiVersion: "api.kubemod.io/v1alpha1" is not served`,
	}
	if len(res.Errors) != len(wants) {
		t.Fatalf("errors: %v", res.Errors)
	}
	for i, w := range wants {
		if !strings.Contains(res.Errors[i].Error(), w) {
			t.Errorf("error %d = %q, want it to contain %q", i, res.Errors[i], w)
		}
	}
	if !errors.Is(res.Errors[2], rules.ErrInvalidRule) {
		t.Error("compile errors must wrap rules.ErrInvalidRule")
	}
}

// TestParallelLoadKeepsOrder loads enough documents to be decoded and
// compiled in parallel: the result and the errors keep document order.
func TestParallelLoadKeepsOrder(t *testing.T) {
	var b strings.Builder
	const n = 300
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata: {name: r%03d, namespace: ns}\nspec:\n  type: Reject\n  match: [{select: '$.kind', matchValue: K%d}]\n", i, i)
		if i%50 == 7 {
			fmt.Fprintf(&b, "---\napiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata: {name: bad%03d, namespace: ns}\nspec:\n  type: Reject\n  match: [{select: '$.kind['}]\n", i)
		}
	}
	docs, err := ParseManifest("many.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	res := LoadRules(docs, testKinds())
	if len(res.Rules) != n+6 || len(res.Errors) != 6 {
		t.Fatalf("%d rules, %d errors", len(res.Rules), len(res.Errors))
	}
	prev := -1
	for i, r := range res.Rules {
		if !strings.HasPrefix(r.Info().Name, "r") {
			continue
		}
		var k int
		fmt.Sscanf(r.Info().Name, "r%d", &k)
		if k != prev+1 {
			t.Fatalf("rule %d is %s, after r%03d", i, r.Info().Name, prev)
		}
		prev = k
	}
	for i, e := range res.Errors {
		if want := fmt.Sprintf("bad%03d", 50*i+7); !strings.Contains(e.Error(), want) {
			t.Fatalf("error %d: %v, want %s", i, e, want)
		}
	}
	// The first bad document in order is the one reported.
	_, err = ParseManifest("x.yaml", []byte(strings.Repeat("---\nkind: A\n", 100)+"---\n[1\n---\nkind: B\n"+strings.Repeat("---\n{\n", 5)))
	if err == nil || !strings.Contains(err.Error(), "x.yaml:202:") {
		t.Fatalf("first error: %v", err)
	}
}
