package arch

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the repository root, from this package's directory.
const root = "../.."

// maxFuncLines is the longest a hand-written non-test function may be.
const maxFuncLines = 120

// kindWords are what a package that knows no kind must not name in code
// (identifiers, string literals, imports; comments may): the rule kinds
// served or planned, their peers and their kinds' own features.
var kindWords = []string{
	"modrule", "kubemod", "syntheticrefs", // KubeMod
	"kinitiras", "kcloudlabs", "overridepolicy", "validatepolicy", // kinitiras
	"clusterpolicy", "kyverno", // modwright's Policy kinds, Kyverno's
	"gatekeeper", "constrainttemplate", // Gatekeeper
}

// kindFree are the packages that know no kind (their directories).
var kindFree = []string{"internal/engine", "internal/webhook", "internal/metrics", "internal/runner", "internal/controller", "internal/cluster", "internal/audit", "internal/auditor"}

// stdlibOnly are the packages that import nothing but the standard library
// (their directories): they run before the rest of the binary initializes,
// which an import of a module would undo (their docs say why).
var stdlibOnly = []string{"internal/startgc", "internal/quickhelp"}

// kindPackages are the import paths only the CLI's registry may import
// there: the kinds and their API types.
func isKindPackage(path string) bool {
	const mod = "github.com/modwright/modwright/"
	return strings.HasPrefix(path, mod+"internal/kinds/") || strings.HasPrefix(path, mod+"api/")
}

// file is one parsed Go file.
type file struct {
	path string // relative to root, slash-separated
	fset *token.FileSet
	ast  *ast.File
}

// parseTree parses every hand-written Go file under dir (test files
// included; generated ones, testdata and caches not).
func parseTree(t *testing.T, dir string) []file {
	t.Helper()
	var out []file
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != dir && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, file{path: filepath.ToSlash(rel), fset: fset, ast: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (f file) pos(p token.Pos) string {
	return fmt.Sprintf("%s:%d", f.path, f.fset.Position(p).Line)
}

func isTest(path string) bool { return strings.HasSuffix(path, "_test.go") }

// namesKind reports what a kind-free file names of a kind: identifiers
// and string literals in code, and imports of kind packages.
func namesKind(f file) []string {
	var out []string
	for _, im := range f.ast.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); isKindPackage(p) {
			out = append(out, fmt.Sprintf("%s: imports %s", f.pos(im.Pos()), p))
		}
	}
	check := func(pos token.Pos, text string) {
		// wgpolicyk8s.io's ClusterPolicyReport is a report of every kind,
		// not a rule kind.
		low := strings.ReplaceAll(strings.ToLower(text), "clusterpolicyreport", "")
		for _, w := range kindWords {
			if strings.Contains(low, w) {
				out = append(out, fmt.Sprintf("%s: names %q (%s)", f.pos(pos), text, w))
				return
			}
		}
	}
	ast.Inspect(f.ast, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ImportSpec:
			return false
		case *ast.Ident:
			check(n.Pos(), n.Name)
		case *ast.BasicLit:
			if n.Kind == token.STRING {
				check(n.Pos(), n.Value)
			}
		}
		return true
	})
	return out
}

// cliReach reports what a CLI file other than the registry must not do:
// import a kind package, or call the engine (engine.New, Evaluate)
// rather than go through the runner.
func cliReach(f file) []string {
	var out []string
	for _, im := range f.ast.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); isKindPackage(p) {
			out = append(out, fmt.Sprintf("%s: imports %s (only registry.go names kinds)", f.pos(im.Pos()), p))
		}
	}
	ast.Inspect(f.ast, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == "engine" && sel.Sel.Name == "New" || sel.Sel.Name == "Evaluate" {
			out = append(out, fmt.Sprintf("%s: calls the engine (%s); go through internal/runner", f.pos(call.Pos()), sel.Sel.Name))
		}
		return true
	})
	return out
}

// moduleImports reports the imports of f that are not of the standard
// library (whose paths' first element has no dot).
func moduleImports(f file) []string {
	var out []string
	for _, im := range f.ast.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ".") {
			out = append(out, fmt.Sprintf("%s: imports %s (only the standard library here: it runs before the binary's modules initialize)", f.pos(im.Pos()), p))
		}
	}
	return out
}

// longFuncs reports the functions longer than maxFuncLines.
func longFuncs(f file) []string {
	var out []string
	for _, d := range f.ast.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		if n := f.fset.Position(fd.End()).Line - f.fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
			out = append(out, fmt.Sprintf("%s: %s is %d lines (at most %d: split it by phase)", f.pos(fd.Pos()), fd.Name.Name, n, maxFuncLines))
		}
	}
	return out
}

// check runs every rule over files.
func check(files []file) []string {
	var out []string
	for _, f := range files {
		dir := filepath.ToSlash(filepath.Dir(f.path))
		if slices.Contains(kindFree, dir) && !isTest(f.path) {
			out = append(out, namesKind(f)...)
		}
		if dir == "internal/cli" && !isTest(f.path) && filepath.Base(f.path) != "registry.go" {
			out = append(out, cliReach(f)...)
		}
		if slices.Contains(stdlibOnly, dir) && !isTest(f.path) {
			out = append(out, moduleImports(f)...)
		}
		if !isTest(f.path) {
			out = append(out, longFuncs(f)...)
		}
	}
	return out
}

// TestHouseRules checks the repository.
func TestHouseRules(t *testing.T) {
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("not at the repository root: %v", err)
	}
	files := parseTree(t, root)
	if len(files) < 100 {
		t.Fatalf("only %d Go files found under %s", len(files), root)
	}
	for _, v := range check(files) {
		t.Error(v)
	}
}

// TestChecksFire: each rule reports what it must, and only that.
func TestChecksFire(t *testing.T) {
	long := "package x\n\nfunc long() {\n" + strings.Repeat("\t_ = 1\n", maxFuncLines-1) + "}\n"
	short := "package x\n\nfunc short() {\n" + strings.Repeat("\t_ = 1\n", maxFuncLines-2) + "}\n"
	tests := []struct {
		name, path, src string
		want            []string // substrings, one per violation
	}{
		{"kernel names a kind", "internal/engine/x.go", "package engine\n\nvar refs = \"syntheticRefs\"\n", []string{`names "\"syntheticRefs\""`}},
		{"kernel identifier", "internal/engine/x.go", "package engine\n\ntype kinitirasKnob bool\n", []string{`names "kinitirasKnob"`}},
		{"webhook imports a kind", "internal/webhook/x.go", "package webhook\n\nimport _ \"github.com/modwright/modwright/internal/kinds/modrule\"\n", []string{"imports github.com/modwright/modwright/internal/kinds/modrule"}},
		{"metrics names a peer", "internal/metrics/x.go", "package metrics\n\nconst sub = \"kcloudlabs\"\n", []string{`names "\"kcloudlabs\""`}},
		{"a comment may", "internal/engine/x.go", "package engine\n\n// KubeMod's denial text.\nvar x = 1\n", nil},
		{"a test may", "internal/engine/x_test.go", "package engine\n\nvar m = \"ModRule\"\n", nil},
		{"a kind package may", "internal/kinds/modrule/x.go", "package modrule\n\nconst Kind = \"ModRule\"\n", nil},
		{"cli imports a kind", "internal/cli/apply.go", "package cli\n\nimport _ \"github.com/modwright/modwright/api/v1beta1\"\n", []string{"imports github.com/modwright/modwright/api/v1beta1"}},
		{"cli registry may", "internal/cli/registry.go", "package cli\n\nimport _ \"github.com/modwright/modwright/internal/kinds/policy\"\n", nil},
		{"cli builds an engine", "internal/cli/serve.go", "package cli\n\nfunc f() { _ = engine.New(engine.Options{}) }\n", []string{"calls the engine (New)"}},
		{"cli evaluates", "internal/cli/apply.go", "package cli\n\nfunc f() { eng.Evaluate(ctx, snap, req) }\n", []string{"calls the engine (Evaluate)"}},
		{"early package imports a module", "internal/quickhelp/x.go", "package quickhelp\n\nimport _ \"github.com/spf13/cobra\"\n", []string{"imports github.com/spf13/cobra (only the standard library"}},
		{"early package imports the standard library", "internal/startgc/x.go", "package startgc\n\nimport _ \"runtime/debug\"\n", nil},
		{"a long function", "internal/value/x.go", long, []string{"long is 121 lines"}},
		{"a function at the limit", "internal/value/x.go", short, nil},
		{"a long test function", "internal/value/x_test.go", long, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, tt.path, tt.src, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			got := check([]file{{path: tt.path, fset: fset, ast: f}})
			if len(got) != len(tt.want) {
				t.Fatalf("got %q, want %d violations %q", got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("violation %q lacks %q", got[i], w)
				}
			}
		})
	}
}
