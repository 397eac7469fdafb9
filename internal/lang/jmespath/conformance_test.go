package jmespath

import (
	"bytes"
	"context"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jmespath-community/go-jmespath/pkg/parsing"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/testtool"
)

// functionCase is one case of Kyverno's functions.json (see its README).
type functionCase struct {
	Name          string          `json:"name"`
	Expression    string          `json:"expression"`
	Data          json.RawMessage `json:"data"`
	Expected      json.RawMessage `json:"expected"`
	ExpectedError bool            `json:"expectedError"`
	ErrorPhase    string          `json:"errorPhase"`
	ErrorMessage  string          `json:"errorMessage"`
}

// overridden lists the built-in functions Kyverno replaces with its own
// that are not implemented yet: their cases are skipped too.
var overridden = []string{}

// deviations lists the cases of implemented functions where modwright
// deliberately differs from Kyverno, each with the reason.
var deviations = map[string]string{}

// TestKyvernoFunctions runs Kyverno's own function cases
// (shared/conformance/kyverno-jmespath/functions.json beside the
// repository, or $MODWRIGHT_KYVERNO_JMESPATH_DIR) whose functions are all
// implemented; the others are counted and logged.
func TestKyvernoFunctions(t *testing.T) {
	dir := testtool.ConformanceDir(t, "kyverno-jmespath", "MODWRIGHT_KYVERNO_JMESPATH_DIR", "functions.json")
	raw, err := os.ReadFile(filepath.Join(dir, "functions.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []functionCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, f := range allFunctions() {
		known[f.Name] = true
	}
	for _, f := range overridden {
		delete(known, f)
	}
	missing := map[string]bool{}
	var passed, skipped, deviated int
	for _, c := range file.Cases {
		if fs := unknownFunctions(c.Expression, known); fs != nil {
			skipped++
			for _, f := range fs {
				missing[f] = true
			}
			continue
		}
		if reason, ok := deviations[c.Name]; ok {
			deviated++
			t.Logf("%s: deviation: %s", c.Name, reason)
			continue
		}
		if runCase(t, c) {
			passed++
		}
	}
	names := make([]string, 0, len(missing))
	for f := range missing {
		names = append(names, f)
	}
	sort.Strings(names)
	t.Logf("%d cases passed, %d deviations", passed, deviated)
	if skipped > 0 {
		t.Logf("%d cases skipped: functions not implemented yet: %s", skipped, strings.Join(names, ", "))
	}
}

// runCase runs one case and reports whether it passed.
func runCase(t *testing.T, c functionCase) bool {
	t.Helper()
	p, ds := Language{}.CompileExpr(&lang.Env{Name: "test"}, c.Expression)
	if ds != nil {
		if c.ExpectedError && (c.ErrorPhase == "" || c.ErrorPhase == "compile") {
			return true
		}
		t.Errorf("%s: %q: compile: %v", c.Name, c.Expression, ds)
		return false
	}
	data, err := decode(c.Data)
	if err != nil {
		t.Errorf("%s: data: %v", c.Name, err)
		return false
	}
	got, err := p.Eval(context.Background(), &lang.Activation{Object: data})
	if c.ExpectedError {
		if err == nil {
			t.Errorf("%s: %q = %v, want an error (Kyverno: %s)", c.Name, c.Expression, got, c.ErrorMessage)
			return false
		}
		if c.ErrorPhase == "compile" {
			t.Errorf("%s: %q: evaluation error %v, want a compile error", c.Name, c.Expression, err)
			return false
		}
		return true
	}
	if err != nil {
		t.Errorf("%s: %q: %v", c.Name, c.Expression, err)
		return false
	}
	want, err := decode(c.Expected)
	if err != nil {
		t.Fatalf("%s: expected: %v", c.Name, err)
	}
	if diff := cmp.Diff(normalize(t, want), normalize(t, got), numericEqual); diff != "" {
		t.Errorf("%s: %q (-want +got):\n%s", c.Name, c.Expression, diff)
		return false
	}
	return true
}

func decode(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// normalize round-trips v through JSON with json.Number numbers.
func normalize(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// numericEqual compares JSON numbers by value, exactly.
var numericEqual = cmp.Comparer(func(a, b json.Number) bool {
	x, _, errx := big.ParseFloat(string(a), 10, 4096, big.ToNearestEven)
	y, _, erry := big.ParseFloat(string(b), 10, 4096, big.ToNearestEven)
	if errx != nil || erry != nil {
		return a == b
	}
	return x.Cmp(y) == 0
})

// unknownFunctions returns the functions src calls that are not known; a
// source that does not parse calls none.
func unknownFunctions(src string, known map[string]bool) []string {
	node, err := parsing.NewParser().Parse(src)
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range unknownCalls(src, node, known, nil) {
		out = append(out, strings.TrimPrefix(d.Msg, "unknown function: "))
	}
	return out
}
