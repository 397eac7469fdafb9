package source_test

import (
	"bufio"
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/testtool"
	"github.com/modwright/modwright/internal/value"
	"github.com/modwright/modwright/test/load"
)

// slowYAML is what decodeChunk gives a YAML document without the block
// subset: sigs.k8s.io/yaml's JSON, decoded.
func slowYAML(doc []byte) (any, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	return value.Decode(j)
}

// stripComments drops full-line comments.
func stripComments(doc []byte) []byte {
	var b []byte
	for l := range bytes.Lines(doc) {
		if t := bytes.TrimSpace(l); len(t) == 0 || t[0] != '#' {
			b = append(b, l...)
		}
	}
	return b
}

// checkBlockYAML compares the block subset with sigs.k8s.io/yaml on every
// document of data; it returns how many documents the subset took and how
// many there were.
func checkBlockYAML(t *testing.T, name string, data []byte) (took, docs int) {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return took, docs
		}
		if err != nil {
			return took, docs
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue // decodeChunk is not given it
		}
		docs++
		fast, ok := source.DecodeBlockYAML(doc)
		if !ok {
			continue
		}
		took++
		slow, err := slowYAML(doc)
		if err != nil {
			t.Errorf("%s: the block subset took a document sigs.k8s.io/yaml refuses (%v):\n%s", name, err, doc)
			continue
		}
		if d := cmp.Diff(slow, fast); d != "" {
			t.Errorf("%s (-sigs.k8s.io/yaml +block subset):\n%s\n%s", name, d, doc)
		}
	}
}

// TestBlockYAML: every YAML document of the repository and of the peers'
// suites the block subset takes decodes as sigs.k8s.io/yaml decodes it;
// the load test's rules are all in the subset.
func TestBlockYAML(t *testing.T) {
	walk := func(t *testing.T, root string) (took, docs int) {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == ".git" || d.Name() == ".cache") {
				return filepath.SkipDir
			}
			if ext := strings.ToLower(filepath.Ext(path)); d.IsDir() || ext != ".yaml" && ext != ".yml" {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			tk, n := checkBlockYAML(t, path, data)
			took, docs = took+tk, docs+n
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: the block subset took %d of %d documents", root, took, docs)
		return took, docs
	}
	t.Run("repository", func(t *testing.T) {
		if took, _ := walk(t, testtool.RepoRoot(t)); took < 300 {
			t.Errorf("the block subset took %d documents of the repository, want at least 300", took)
		}
	})
	// The peers' suites, by the variables the other tests read them from.
	for _, set := range []struct{ name, env string }{
		{"kubemod", "MODWRIGHT_CONFORMANCE_DIR"}, {"kubemod-realworld", "MODWRIGHT_REALWORLD_DIR"},
		{"kyverno-policies", "MODWRIGHT_KYVERNO_POLICIES_DIR"}, {"gatekeeper-library", "MODWRIGHT_GATEKEEPER_LIBRARY_DIR"},
		{"kinitiras", "MODWRIGHT_KINITIRAS_DIR"}, {"kubeatlas-rules", "MODWRIGHT_KUBEATLAS_RULES_DIR"},
	} {
		t.Run(set.name, func(t *testing.T) {
			walk(t, testtool.ConformanceDir(t, set.name, set.env, "README.md"))
		})
	}
	for name, data := range map[string][]byte{"RuleSet": load.RuleSet(200, 10), "PolicySet": load.PolicySet(200, 10)} {
		if took, docs := checkBlockYAML(t, name, data); took != docs {
			t.Errorf("%s: the block subset took %d of %d documents, want all", name, took, docs)
		}
	}
}

// TestBlockYAMLCases: documents at the subset's edges, taken or not; the
// taken ones decode as sigs.k8s.io/yaml decodes them.
func TestBlockYAMLCases(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		took bool
	}{
		{"a: b\n", true},
		{"a: 'it''s # not a comment'  # a comment\nb: \"x: y\"\n", true},
		{"a:\n- 1\n- -2\n- 0\nb: c\n", true},
		{"a:\n  - x: 1\n    w: [] # empty\n  -\n    z: {}\n  - - nested\n", false},
		{"a:\n  - x: 1\n    w: []\n  -\n    z: {}\n", true},
		{"a:\n  - x: 1\n    y: []\n", false},
		{"a: |\n  line 1\n\n    indented # not a comment\n  line 3\n\n\nb: |-\n  x\n  y\n\n", true},
		{"- a\n", false},
		{"a: |+\n  x\n", false},
		{"a: >\n  x\n", false},
		{"a: |2\n   x\n", false},
		{"a: true\nb: False\nc: ~\nd: null\ne:\n", true},
		{"a: yes\n", false},
		{"on: x\n", false},
		{"a: 0777\n", false},
		{"a: 1.5\n", false},
		{"a: 1e3\n", false},
		{"a: 123456789012345678\n", true},
		{"a: 1234567890123456789\n", false},
		{"a: -0\n", false},
		{"a: .inf\n", false},
		{"a: 2001-12-14\n", false},
		{"a: 1:20\n", false},
		{"a: &x b\nc: *x\n", false},
		{"a: !!str 1\n", false},
		{"a: \"esc\\n\\\\.\\\"\\ \\t\"\n", true},
		{"a: \"esc\\x41\"\n", false},
		{"a: \"esc\\u0041\"\n", false},
		{"a: \"two\n  lines\"\n", false},
		{"a: b\n c\n", false},
		{"a: b\na: c\n", false},
		{"a: nginx:1.14 # image\nb: /x/#0/y\n", true},
		{"a: b: c\n", false},
		{"a:\tb\n", false},
		{"a: b\r\n", false},
		{"a: é\n", false},
		{"'a': b\n", false},
		{"a: [1, 'two', \"three\", true, ~]\n", true},
		{"a: {b: c, d: 'e', f: 1}  # flow\n", true},
		{"a: [1, [2, {b: [c]}], {}]\n", true},
		{"a: {b: {c: [d, 'e']}, f: []}\n", true},
		{"a: [{name: app, image: registry.example.com/checkout:1.4}]\n", true},
		{"a: [b: c]\n", false},
		{"a: [b:]\n", false},
		{"a: [b}\n", false},
		{"a: {b: c]\n", false},
		{"a: [1, 2,]\n", false},
		{"a: [1,, 2]\n", false},
		{"a: [a:b]\n", true},
		{"a: {b: c, b: d}\n", false},
		{"a: {b}\n", false},
		{"a: [1, 2] x\n", false},
		{"a:\n  b: 1\n c: 2\n", false},
		{"a: |\nb: c\n", false},
		{"a: 'unterminated\n", false},
		{"a: $(VAR) ^x (y)\n", true},
		{"  a: 1\n  b:\n    c: 2\n", true},
	} {
		v, ok := source.DecodeBlockYAML([]byte(tc.doc))
		if ok != tc.took {
			t.Errorf("%q: taken %v, want %v", tc.doc, ok, tc.took)
		}
		if !ok {
			continue
		}
		slow, err := slowYAML([]byte(tc.doc))
		if err != nil {
			t.Errorf("%q: taken, and sigs.k8s.io/yaml refuses it: %v", tc.doc, err)
			continue
		}
		if d := cmp.Diff(slow, v); d != "" {
			t.Errorf("%q (-sigs.k8s.io/yaml +block subset):\n%s", tc.doc, d)
		}
	}
}

// FuzzBlockYAML: whatever the block subset takes decodes as
// sigs.k8s.io/yaml decodes it.
func FuzzBlockYAML(f *testing.F) {
	for _, s := range []string{
		"a: b\n", "a:\n- 1\n- x: y\n  z: 'q'\n", "a: |\n  x\n\n  y\nb: |-\n  z\n", "a: \"s\"\nb: [] # c\nc: {}\n",
		strings.Split(string(load.RuleSet(10, 1)), "\n---\n")[1], strings.Split(string(load.PolicySet(10, 1)), "\n---\n")[1],
	} {
		f.Add([]byte(s))
	}
	// And the documents of the repository's corpus and examples.
	for _, dir := range []string{"testdata", "examples"} {
		err := filepath.WalkDir(filepath.Join(testtool.RepoRoot(f), dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			data, err := os.ReadFile(path)
			for _, doc := range strings.Split(string(data), "\n---\n") {
				if len(doc) < 4096 {
					f.Add([]byte(doc))
				}
			}
			return err
		})
		if err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		v, ok := source.DecodeBlockYAML(doc)
		if !ok {
			return
		}
		slow, err := slowYAML(doc)
		if err != nil {
			t.Fatalf("%q: taken, and sigs.k8s.io/yaml refuses it: %v", doc, err)
		}
		if d := cmp.Diff(slow, v); d != "" {
			t.Fatalf("%q (-sigs.k8s.io/yaml +block subset):\n%s", doc, d)
		}
	})
}

// TestBlockYAMLDepth: nesting past the subset's bound is left to
// sigs.k8s.io/yaml, block and flow alike.
func TestBlockYAMLDepth(t *testing.T) {
	var b strings.Builder
	for i := range 300 {
		b.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	b.WriteString(strings.Repeat(" ", 300) + "a: 1\n")
	if _, ok := source.DecodeBlockYAML([]byte(b.String())); ok {
		t.Error("300 nested mappings taken")
	}
	if _, ok := source.DecodeBlockYAML([]byte("a: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n")); ok {
		t.Error("100 nested flow sequences taken")
	}
	if _, ok := source.DecodeBlockYAML([]byte("a: " + strings.Repeat("[", 20) + strings.Repeat("]", 20) + "\n")); !ok {
		t.Error("20 nested flow sequences not taken")
	}
}
