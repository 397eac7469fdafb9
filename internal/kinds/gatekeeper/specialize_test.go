package gatekeeper_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/gatekeeper"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/suite"
	"github.com/modwright/modwright/internal/testtool"
)

// TestSpecializedLibrary is differential: every template of Gatekeeper's
// library, its Rego run (K8sNativeValidation code left out), with each
// constraint of its suite specialized for its parameters and not, gives
// the same decision on every case object of the suite, created and
// updated (the library's templates skip some checks on UPDATE).
func TestSpecializedLibrary(t *testing.T) {
	dir := testtool.ConformanceDir(t, "gatekeeper-library", "MODWRIGHT_GATEKEEPER_LIBRARY_DIR", "library")
	var files []string
	_ = filepath.WalkDir(filepath.Join(dir, "library"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == suite.GatorFileName {
			files = append(files, p)
		}
		return err
	})
	if len(files) == 0 {
		t.Fatalf("no %s under %s", suite.GatorFileName, dir)
	}
	var specialized, compared, folded, celCompared int
	for _, f := range files {
		for _, keepCEL := range []bool{false, true} {
			gs, err := suite.LoadGator(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, gt := range gs.Tests {
				if gt.Invalid || gt.Skip {
					continue
				}
				docs, err := source.ReadPaths([]string{filepath.Join(gs.Dir, gt.Template), filepath.Join(gs.Dir, gt.Constraint)}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if keepCEL && !strings.Contains(string(docs[0].JSON), "K8sNativeValidation") {
					continue // the Rego pass compared it
				}
				for i := range docs {
					if keepCEL {
						continue
					}
					if err := withoutCEL(&docs[i]); err != nil {
						t.Fatal(err)
					}
				}
				load := func(opts ...gatekeeper.Option) *engine.Snapshot {
					res := source.LoadRules(docs, kinds.NewRegistry(gatekeeper.NewKind(append(opts, gatekeeper.AnyOperation())...)))
					if len(res.Errors) > 0 || len(res.Rules) != 1 {
						t.Fatalf("%s %s: %d rules: %v", f, gt.Name, len(res.Rules), errors.Join(res.Errors...))
					}
					if c, ok := res.Rules[0].(*gatekeeper.Constraint); ok && c.Specialized() {
						specialized++
					}
					if c, ok := res.Rules[0].(*gatekeeper.Constraint); ok {
						folded += c.ConstantVariables()
					}
					return engine.NewSnapshot(res.Rules)
				}
				spec, general := load(), load(gatekeeper.General())
				for _, tc := range gt.Cases {
					if tc.Skip || len(tc.Inventory) > 0 {
						continue
					}
					objs, err := source.ReadPaths([]string{filepath.Join(gs.Dir, tc.Object)}, nil)
					if err != nil || len(objs) != 1 || objs[0].Kind() == "AdmissionReview" {
						continue
					}
					obj := objs[0].Object
					for _, req := range []engine.Request{
						{Operation: rules.Create, Namespace: objs[0].Namespace(), Object: obj},
						{Operation: rules.Update, Namespace: objs[0].Namespace(), Object: obj, OldObject: obj},
					} {
						got, want := decide(t, spec, req), decide(t, general, req)
						if diff := cmp.Diff(want, got); diff != "" {
							t.Errorf("%s: %s: %s (%s, CEL %v): specialized differs (-general +specialized):\n%s", f, gt.Name, tc.Name, req.Operation, keepCEL, diff)
						}
						compared++
						if keepCEL {
							celCompared++
						}
					}
				}
			}
		}
	}
	t.Logf("%d reviews compared (%d through the templates' CEL), %d constraints specialized, %d constant CEL variables computed when their constraints loaded", compared, celCompared, specialized, folded)
	if specialized == 0 || compared == 0 || folded == 0 || celCompared == 0 {
		t.Fatal("nothing specialized, folded or compared")
	}
}

// decide is a decision's outcome as text: rejections, warnings, errors
// and each constraint's violations with their details (a dryrun one's
// too).
func decide(t *testing.T, s *engine.Snapshot, req engine.Request) []string {
	t.Helper()
	d, err := engine.New(engine.Options{}).Evaluate(context.Background(), s, req)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range d.Rejections {
		out = append(out, "deny "+r.String())
	}
	for _, w := range d.Warnings {
		out = append(out, "warn "+w.Rule+": "+w.Message)
	}
	for _, e := range d.Errors {
		out = append(out, "error "+strings.ReplaceAll(e.Error(), "\n", " "))
	}
	for _, tr := range d.Trace {
		if gt, ok := tr.Detail.(*gatekeeper.Trace); ok {
			for _, v := range gt.Violations {
				out = append(out, fmt.Sprintf("violation %s %#v", v.Msg, v.Details))
			}
		}
	}
	return out
}

// TestSpecializedBudget: at most MaxSpecialized live constraints of one
// template are specialized; the others run its Rego as compiled and
// decide alike; General specializes none.
func TestSpecializedBudget(t *testing.T) {
	text := template
	const n = gatekeeper.MaxSpecialized + 4
	for i := range n {
		text += fmt.Sprintf("---\napiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K8sRequiredLabels\nmetadata: {name: c%02d}\nspec: {parameters: {labels: [l%d]}}\n", i, i)
	}
	count := func(res source.LoadResult) (k int) {
		for _, r := range res.Rules {
			if r.(*gatekeeper.Constraint).Specialized() {
				k++
			}
		}
		return k
	}
	res := load(t, text)
	if len(res.Rules) != n {
		t.Fatalf("%d rules: %v", len(res.Rules), res.Errors)
	}
	if got := count(res); got != gatekeeper.MaxSpecialized {
		t.Errorf("%d specialized, want %d", got, gatekeeper.MaxSpecialized)
	}
	general := source.LoadRules(manifests(t, text), kinds.NewRegistry(gatekeeper.NewKind(gatekeeper.General())))
	if got := count(general); got != 0 {
		t.Errorf("General: %d specialized", got)
	}
	const pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team-a, labels: {l3: x}}\n"
	got, want := violations(review(t, engine.NewSnapshot(res.Rules), nil, pod)), violations(review(t, engine.NewSnapshot(general.Rules), nil, pod))
	if len(want) != n-1 {
		t.Fatalf("%d violations: %v", len(want), want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-general +budgeted):\n%s", diff)
	}
}
