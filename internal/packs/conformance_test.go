package packs_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/lang/rego"
	"github.com/modwright/modwright/internal/packs"
	"github.com/modwright/modwright/internal/testtool"
	"github.com/modwright/modwright/internal/value"
)

func conformance(t *testing.T) string {
	return testtool.ConformanceDir(t, "kubeatlas-rules", "MODWRIGHT_KUBEATLAS_RULES_DIR", "loader/loader-cases.json")
}

type loaderCase struct {
	Name          string            `json:"name"`
	Kind          string            `json:"kind"`
	PackDir       string            `json:"packDir"`
	Files         map[string]string `json:"files"`
	EngineVersion string            `json:"engineVersion"`
	Metadata      *packs.Metadata   `json:"metadata"`
	Constraint    string            `json:"constraint"`
	Ref           string            `json:"ref"`
	RuleOutput    any               `json:"ruleOutput"`
	Pack          *struct {
		Name    string `json:"name"`
		Modules []struct {
			Name, Source, Entrypoint string
		} `json:"modules"`
	} `json:"pack"`
	Expect struct {
		OK            bool     `json:"ok"`
		ErrorKind     string   `json:"errorKind"`
		ErrorContains []string `json:"errorContains"`
		Repository    string   `json:"repository"`
		Tag           string   `json:"tag"`
		Pack          *struct {
			Name    string `json:"name"`
			Version string `json:"version"`
			Modules []struct {
				Key   string      `json:"key"`
				Match packs.Match `json:"match"`
			} `json:"modules"`
		} `json:"pack"`
		Evaluate *struct {
			Module string       `json:"module"`
			Input  any          `json:"input"`
			Edges  []packs.Edge `json:"edges"`
		} `json:"evaluate"`
	} `json:"expect"`
}

// errorKinds are the loader's error kinds, as the cases name them.
var errorKinds = map[string]error{
	"ErrIncompatibleRegoAPI":   packs.ErrIncompatibleRegoAPI,
	"ErrIncompatibleKubeAtlas": packs.ErrIncompatibleKubeAtlas,
	"InvalidMetadata":          packs.ErrInvalidMetadata,
	"InvalidConstraint":        packs.ErrInvalidConstraint,
	"ParseError":               packs.ErrParse,
	"NotExist":                 fs.ErrNotExist,
	"CompileError":             rego.ErrCompile,
	"InvalidRef":               packs.ErrInvalidRef,
	"ShapeError":               packs.ErrShape,
}

// TestConformanceLoader runs KubeAtlas' loader cases (and the constraint
// cases derived from the catalogue packs): each error is the sentinel
// the case names (errors.Is) and says what it names.
func TestConformanceLoader(t *testing.T) {
	dir := conformance(t)
	b, err := os.ReadFile(filepath.Join(dir, "loader", "loader-cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases   []loaderCase `json:"cases"`
		Derived []loaderCase `json:"derivedConstraintCases"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) != 22 || len(file.Derived) < 50 {
		t.Fatalf("%d cases and %d derived ones", len(file.Cases), len(file.Derived))
	}
	ctx := context.Background()
	for _, c := range append(file.Cases, file.Derived...) {
		t.Run(c.Name, func(t *testing.T) {
			var err error
			var pack *packs.Pack
			switch c.Kind {
			case "loadDir":
				pd := filepath.Join(dir, c.PackDir)
				if c.PackDir == "" {
					pd = t.TempDir()
					for name, text := range c.Files {
						if err := os.WriteFile(filepath.Join(pd, name), []byte(text), 0o644); err != nil {
							t.Fatal(err)
						}
					}
				}
				pack, err = packs.LoadDir(ctx, pd, c.EngineVersion, 0)
			case "validateMetadata":
				err = packs.ValidateMetadata(c.Metadata)
			case "checkConstraint":
				err = packs.CheckConstraint(c.Constraint, c.EngineVersion)
			case "register":
				var mods []packs.SourceModule
				for _, m := range c.Pack.Modules {
					mods = append(mods, packs.SourceModule{Name: m.Name, Source: m.Source, Entrypoint: m.Entrypoint})
				}
				pack, err = packs.Register(ctx, packs.Metadata{Name: c.Pack.Name}, mods, 0)
			case "splitRef":
				var repo, tag string
				repo, tag, err = packs.SplitRef(c.Ref)
				if err == nil && (repo != c.Expect.Repository || tag != c.Expect.Tag) {
					t.Errorf("split %q, %q; want %q, %q", repo, tag, c.Expect.Repository, c.Expect.Tag)
				}
			case "decodeEdges":
				_, err = packs.DecodeEdges(c.RuleOutput)
			default:
				t.Fatalf("kind %q", c.Kind)
			}
			if !c.Expect.OK {
				want, ok := errorKinds[c.Expect.ErrorKind]
				if !ok {
					t.Fatalf("error kind %q", c.Expect.ErrorKind)
				}
				if !errors.Is(err, want) {
					t.Fatalf("error %v, want %s", err, c.Expect.ErrorKind)
				}
				for _, s := range c.Expect.ErrorContains {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if w := c.Expect.Pack; w != nil {
				if pack.Name != w.Name || w.Version != "" && pack.Version != w.Version {
					t.Errorf("pack %s %s", pack.Name, pack.Version)
				}
				for i, m := range w.Modules {
					if i >= len(pack.Modules) || pack.Modules[i].Key != m.Key || pack.Modules[i].Match != m.Match {
						t.Errorf("module %d: want %+v", i, m)
					}
				}
			}
			if ev := c.Expect.Evaluate; ev != nil {
				var mod *packs.Module
				for _, m := range pack.Modules {
					if m.Key == ev.Module {
						mod = m
					}
				}
				input, _ := value.Decode(mustJSON(t, ev.Input))
				got, err := mod.Derive(ctx, input)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(ev.Edges, got); d != "" {
					t.Errorf("edges (-kubeatlas +modwright):\n%s", d)
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestConformancePacks loads every public pack and derives each sample's
// edges as `rules-test` does (routed modules, the first YAML document of
// the sample): the multiset of edges equals the one OPA gave KubeAtlas'
// way, and every sample gives one at least.
func TestConformancePacks(t *testing.T) {
	dir := filepath.Join(conformance(t), "packs")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	nPacks, nSamples, nEdges := 0, 0, 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			pd := filepath.Join(dir, e.Name())
			var want struct {
				Samples []struct {
					File        string       `json:"file"`
					RoutedEdges []packs.Edge `json:"routedEdges"`
				} `json:"samples"`
			}
			b, err := os.ReadFile(filepath.Join(pd, "expected-edges.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			pack, err := packs.LoadDir(ctx, pd, packs.KubeAtlasVersion, 0)
			if err != nil {
				t.Fatal(err)
			}
			nPacks++
			router := packs.NewRouter(pack)
			for _, s := range want.Samples {
				data, err := os.ReadFile(filepath.Join(pd, s.File))
				if err != nil {
					t.Fatal(err)
				}
				first, _, _ := strings.Cut(string(data), "\n---")
				var obj map[string]any
				if err := yaml.Unmarshal([]byte(first), &obj); err != nil {
					t.Fatal(err)
				}
				tree, _ := value.Decode(mustJSON(t, obj))
				got, errs := router.Derive(ctx, tree.(map[string]any))
				if errs != nil {
					t.Errorf("%s: %v", s.File, errs)
				}
				sortEdges(got)
				sortEdges(s.RoutedEdges)
				if d := cmp.Diff(s.RoutedEdges, got); d != "" {
					t.Errorf("%s: edges (-kubeatlas +modwright):\n%s", s.File, d)
				}
				if len(got) == 0 {
					t.Errorf("%s: no edge", s.File)
				}
				nSamples++
				nEdges += len(got)
			}
		})
	}
	t.Logf("%d packs, %d samples, %d edges", nPacks, nSamples, nEdges)
}

func sortEdges(es []packs.Edge) {
	sort.Slice(es, func(i, j int) bool {
		a, b := mustKey(es[i]), mustKey(es[j])
		return a < b
	})
}

func mustKey(e packs.Edge) string {
	b, _ := json.Marshal(e)
	return string(b)
}
