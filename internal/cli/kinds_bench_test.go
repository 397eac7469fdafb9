package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/runner"
	"github.com/modwright/modwright/internal/value"
)

// The same three checks of a Deployment (the label team, pinned images,
// at most 10 replicas) in every rule kind and language, each a file of
// testdata/bench/kinds: what one kind costs against another for the same
// work, through the admission chain every front end uses.

const kindsDir = "../../testdata/bench/kinds"

// kindSets are the rule sets, by the kind and language they are written in.
var kindSets = []struct{ name, file string }{
	{"ModRule (JSONPath)", "modrule.yaml"},
	{"ModwrightPolicy (CEL)", "policy-cel.yaml"},
	{"ModwrightPolicy (JMESPath)", "policy-jmespath.yaml"},
	{"ModwrightPolicy (CUE)", "policy-cue.yaml"},
	{"ModwrightPolicy (Rego)", "policy-rego.yaml"},
	{"kinitiras ClusterValidatePolicy (CUE)", "kinitiras.yaml"},
	{"Kyverno ClusterPolicy (patterns)", "kyverno-clusterpolicy.yaml"},
	{"Kyverno ValidatingPolicy (CEL)", "kyverno-validatingpolicy.yaml"},
	{"Gatekeeper constraint (Rego)", "gatekeeper.yaml"},
	{"ValidatingAdmissionPolicy (CEL)", "admissionpolicy.yaml"},
}

// kindChain is the admission chain of one rule set (no trace, as the
// webhook evaluates).
func kindChain(tb testing.TB, file string) *runner.Chain {
	tb.Helper()
	s := Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}
	snap, policies, err := loadRules([]string{filepath.Join(kindsDir, file)}, s, newRegistry(defaultClusterRulesNamespace), ruleLoading{policies: true})
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range snap.Broken() {
		tb.Fatalf("%s: %v", file, r.Info().Err)
	}
	return runner.NewChain(runner.NewEngineOptions(snap, engine.Options{NoTrace: true}), runner.ChainOptions{Policies: policies})
}

// kindsObject is the load test's Deployment (3.5 KB) with the label team
// (compliant), changed by edit.
func kindsObject(tb testing.TB, edit func(map[string]any)) map[string]any {
	tb.Helper()
	data, err := os.ReadFile("../../testdata/bench/objects/deployment.json")
	if err != nil {
		tb.Fatal(err)
	}
	v, err := value.Decode(data)
	if err != nil {
		tb.Fatal(err)
	}
	obj := v.(map[string]any)
	obj["metadata"].(map[string]any)["labels"].(map[string]any)["team"] = "payments"
	if edit != nil {
		edit(obj)
	}
	return obj
}

// TestKindsSameChecks: every rule set admits the compliant Deployment and
// refuses each violation with its check's message: the benchmark's rule
// sets do the same work.
func TestKindsSameChecks(t *testing.T) {
	containers := func(o map[string]any) []any {
		return o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
	}
	violations := []struct {
		msg  string
		edit func(map[string]any)
	}{
		{"the label team is required", func(o map[string]any) { delete(o["metadata"].(map[string]any)["labels"].(map[string]any), "team") }},
		{"images are pinned", func(o map[string]any) { containers(o)[1].(map[string]any)["image"] = "nginx:latest" }},
		{"at most 10 replicas", func(o map[string]any) { o["spec"].(map[string]any)["replicas"] = int64(20) }},
	}
	for _, ks := range kindSets {
		t.Run(ks.name, func(t *testing.T) {
			chain := kindChain(t, ks.file)
			run := func(obj map[string]any) *runner.Result {
				res, err := chain.Run(context.Background(), runner.Request{Operation: rules.Create, Namespace: "bench", Object: obj})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			if res := run(kindsObject(t, nil)); !res.Allowed {
				t.Errorf("the compliant Deployment refused: %s", res.Denial)
			}
			for _, v := range violations {
				if res := run(kindsObject(t, v.edit)); res.Allowed || !strings.Contains(res.Denial, v.msg) {
					t.Errorf("%s: allowed %v, denial %q", v.msg, res.Allowed, res.Denial)
				}
			}
		})
	}
}

// BenchmarkKinds is one admission of the compliant Deployment through each
// rule set.
func BenchmarkKinds(b *testing.B) {
	for _, ks := range kindSets {
		b.Run(ks.file, func(b *testing.B) { benchKind(b, ks.file) })
	}
}

func benchKind(b *testing.B, file string) {
	chain := kindChain(b, file)
	obj := kindsObject(b, nil)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := chain.Run(ctx, runner.Request{Operation: rules.Create, Namespace: "bench", Object: obj})
		if err != nil || !res.Allowed {
			b.Fatal(err, res.Denial)
		}
	}
}

// TestKindsTable prints the per-kind table of `make bench`
// (MODWRIGHT_KINDS_TABLE=1): each rule set's cost per admission, its
// allocations, and its ratio to the fastest.
func TestKindsTable(t *testing.T) {
	if os.Getenv("MODWRIGHT_KINDS_TABLE") != "1" {
		t.Skip("MODWRIGHT_KINDS_TABLE=1 prints the table (make bench)")
	}
	type row struct {
		name         string
		ns, bytes, n int64
	}
	var rows []row
	for _, ks := range kindSets {
		r := testing.Benchmark(func(b *testing.B) { benchKind(b, ks.file) })
		rows = append(rows, row{ks.name, r.NsPerOp(), r.AllocedBytesPerOp(), r.AllocsPerOp()})
	}
	fastest := slices.MinFunc(rows, func(a, b row) int { return int(a.ns - b.ns) }).ns
	var out strings.Builder
	fmt.Fprintln(&out, "| kind (language) | per admission | allocated | allocations | to the fastest |")
	fmt.Fprintln(&out, "|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintf(&out, "| %s | %.1f µs | %.1f KB | %d | %.2fx |\n", r.name, float64(r.ns)/1e3, float64(r.bytes)/1024, r.n, float64(r.ns)/float64(fastest))
	}
	fmt.Print(out.String())
}
