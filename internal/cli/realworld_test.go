package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/runner"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/testtool"
	"github.com/modwright/modwright/internal/value"
)

// The real-world differential test: published ModRules run through
// `modwright apply -o json` and compared with the results of KubeMod v0.20's
// own engine (expected.json in each case), as the data set's compare.py
// compares them. The data lives beside the repository, in
// ../shared/conformance/kubemod-realworld (cases/ and repro-cases/), or in
// $MODWRIGHT_REALWORLD_DIR; it is not part of the project.

// realworldSets are the case directories of the data set.
var realworldSets = []string{"cases", "repro-cases"}

// realworldDeviations are the cases where modwright deliberately differs
// from KubeMod, by set/case, each with the reason (see docs/compatibility.md)
// and a check that the difference is the documented one. A listed case that
// starts to agree fails the test, so that the list stays true.
var realworldDeviations = map[string]struct {
	reason string
	check  func(e, m realworldResult) error
}{
	"cases/i120-sts-1000000-replicas": {
		reason: "docs/compatibility.md deviation 3: numbers become plain decimal text (1000000), not Go's %v of a float64 (1e+06), in the rejectMessage",
		check: func(e, m realworldResult) error {
			if m.Allowed || !strings.Contains(m.Denial, "1000000") || !strings.Contains(e.Denial, "1e+06") {
				return fmt.Errorf("want denials with 1e+06 (KubeMod) and 1000000 (modwright)")
			}
			return nil
		},
	},
	"cases/readme-node-labels-node-key": {
		reason: "docs/compatibility.md deviation 9: the ref.kubemod.io/node annotation is read as well as ref.kubemod.io/nodename, so the node's labels are copied",
		check: func(e, m realworldResult) error {
			if !m.Allowed || !e.Allowed || len(labels(m.Object)) <= len(labels(e.Object)) {
				return fmt.Errorf("want both admitted, with more labels from modwright")
			}
			return nil
		},
	},
	"cases/readme-node-labels-missing-zone": afterAdmission,
	"cases/sample6-blue-no-flavor":          afterAdmission,
	"cases/readme-root-two-rules": {
		reason: "docs/compatibility.md, Ordering: rules of one tier run in namespace/name order, so the denial lists the two rules in another order than KubeMod's store order",
		check: func(e, m realworldResult) error {
			if e.Allowed || m.Allowed || !sameItems(e.Denial, m.Denial) {
				return fmt.Errorf("want the same denial up to the order of the rules")
			}
			return nil
		},
	},
	"repro-cases/add-positive-index-missing-array": {
		reason: "docs/compatibility.md deviation 11: add .../args/2 on a missing array fails the rule (only 0, - and -1 create an array); KubeMod pads with nulls",
		check: func(e, m realworldResult) error {
			if !m.Allowed || !strings.Contains(m.Stderr, "only 0, - and -1 can create an array") {
				return fmt.Errorf("want the object admitted and the rule failed with \"only 0, - and -1 can create an array\"")
			}
			return nil
		},
	},
}

// sameItems reports whether two denials list the same rules (and messages),
// in any order: the same multiset of comma-separated pieces.
func sameItems(a, b string) bool {
	const prefix = "operation rejected by the following ModRule(s): "
	a, okA := strings.CutPrefix(a, prefix)
	b, okB := strings.CutPrefix(b, prefix)
	if !okA || !okB {
		return false
	}
	count := map[string]int{}
	for _, w := range strings.Split(a, ",") {
		count[w]++
	}
	for _, w := range strings.Split(b, ",") {
		count[w]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return true
}

// realworldDir finds the data set: $MODWRIGHT_REALWORLD_DIR, or
// shared/conformance/kubemod-realworld beside the repository. Absent, the
// test skips, or fails under MODWRIGHT_REQUIRE_CONFORMANCE=1 (.ci/run).
func realworldDir(t *testing.T) string {
	t.Helper()
	return testtool.ConformanceDir(t, "kubemod-realworld", "MODWRIGHT_REALWORLD_DIR", "cases")
}

// realworldResult is one side of a case, in expected.json's terms.
type realworldResult struct {
	Invalid bool   `json:"invalid"`
	Error   string `json:"error"`
	Allowed bool   `json:"allowed"`
	Denial  string `json:"denial"`
	Object  any    `json:"-"`
	Stderr  string `json:"-"`
}

// afterAdmission is the deviation of a case whose Patch rule writes the
// label value "<no value>" (a template's missing value): KubeMod's
// webhook admits the object, and the API server then refuses it, as it
// validates every object's labels after admission; apply answers as the
// cluster does.
var afterAdmission = struct {
	reason string
	check  func(e, m realworldResult) error
}{
	reason: "docs/compatibility.md, After admission: the patched label value \"<no value>\" is invalid; KubeMod's webhook admits the object, the API server then refuses it, and so does apply",
	check: func(e, m realworldResult) error {
		if !e.Allowed || m.Allowed || !strings.Contains(m.Stderr, "invalid after the rules") || !strings.Contains(m.Stderr, `Invalid value: "<no value>"`) {
			return fmt.Errorf("want KubeMod admitting and apply refusing the label value <no value> after the rules")
		}
		return nil
	},
}

func TestKubeModRealWorld(t *testing.T) {
	dir := realworldDir(t)
	seen := map[string]bool{}
	agree, deviations, total := map[string]int{}, map[string]int{}, map[string]int{}
	for _, set := range realworldSets {
		entries, err := os.ReadDir(filepath.Join(dir, set))
		if err != nil {
			t.Fatal(err)
		}
		for _, ent := range entries {
			caseDir := filepath.Join(dir, set, ent.Name())
			if _, err := os.Stat(filepath.Join(caseDir, "expected.json")); !ent.IsDir() || err != nil {
				continue
			}
			id := set + "/" + ent.Name()
			total[set]++
			t.Run(id, func(t *testing.T) {
				e := readExpected(t, caseDir)
				m := runRealworldCase(t, caseDir)
				why := compareRealworld(e, m)
				dev, listed := realworldDeviations[id]
				seen[id] = listed
				switch {
				case listed && len(why) == 0:
					t.Errorf("listed as a deviation (%s) but agrees with KubeMod now: remove it from realworldDeviations (and from docs/compatibility.md if it is gone)", dev.reason)
				case listed:
					if err := dev.check(e, m); err != nil {
						t.Errorf("documented deviation (%s), but not the documented difference: %v\n%s", dev.reason, err, strings.Join(why, "\n"))
						return
					}
					deviations[set]++
					t.Logf("documented deviation: %s\n%s", dev.reason, strings.Join(why, "\n"))
				case len(why) > 0:
					t.Errorf("disagrees with KubeMod (%s):\n%s\nstderr:\n%s", caseDir, strings.Join(why, "\n"), m.Stderr)
				default:
					agree[set]++
				}
			})
		}
	}
	for id := range realworldDeviations {
		if _, ok := seen[id]; !ok {
			t.Errorf("deviation %s: no such case", id)
		}
	}
	for _, set := range realworldSets {
		t.Logf("%s: %d/%d agree, %d documented deviations", set, agree[set], total[set], deviations[set])
	}
}

func readExpected(t *testing.T, caseDir string) realworldResult {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(caseDir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e realworldResult
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatalf("expected.json: %v", err)
	}
	var raw struct {
		Object json.RawMessage `json:"object"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Object != nil {
		if e.Object, err = value.Decode(raw.Object); err != nil {
			t.Fatalf("expected.json object: %v", err)
		}
	}
	return e
}

// runRealworldCase runs the case as run.sh does: modwright apply --rules
// rules.yaml -f object.yaml --operation $OPERATION -o json [--context
// context.yaml], in process, and reads the result as compare.py does.
func runRealworldCase(t *testing.T, caseDir string) realworldResult {
	t.Helper()
	env, err := os.ReadFile(filepath.Join(caseDir, "case.env"))
	if err != nil {
		t.Fatal(err)
	}
	op := "CREATE"
	for _, line := range strings.Split(string(env), "\n") {
		if v, ok := strings.CutPrefix(line, "OPERATION="); ok && v != "" {
			op = strings.TrimSpace(v)
		}
	}
	args := []string{"apply", "--rules", filepath.Join(caseDir, "rules.yaml"), "-f", filepath.Join(caseDir, "object.yaml"), "--operation", op, "-o", "json"}
	if ctx := filepath.Join(caseDir, "context.yaml"); fileExists(ctx) {
		args = append(args, "--context", ctx)
	}
	var stdout, stderr bytes.Buffer
	code := ExecuteContext(context.Background(), args, Streams{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
	m := realworldResult{Stderr: strings.TrimSpace(stderr.String())}
	switch code {
	case 0:
		m.Allowed = true
		if m.Object, err = value.Decode(stdout.Bytes()); err != nil {
			t.Fatalf("stdout: %v\n%s", err, stdout.String())
		}
	case 1:
		m.Denial = "?"
		for _, line := range strings.Split(stderr.String(), "\n") {
			if i := strings.Index(line, "operation rejected"); strings.HasPrefix(line, "rejected:") && i >= 0 {
				m.Denial = line[i:]
				break
			}
		}
	case 2:
		m.Invalid, m.Error = true, m.Stderr
	default:
		m.Invalid, m.Error = true, fmt.Sprintf("exit %d: %s", code, m.Stderr)
	}
	if code == 0 || code == 1 {
		checkRealworldWebhook(t, caseDir, op, m)
	}
	return m
}

// checkRealworldWebhook runs the case's objects through the dragnet webhook
// handler (runner.Webhook) and requires apply's answer: the same admission,
// denial and (patched) object.
func checkRealworldWebhook(t *testing.T, caseDir, op string, m realworldResult) {
	t.Helper()
	var discard bytes.Buffer
	streams := Streams{In: strings.NewReader(""), Out: &discard, Err: &discard}
	snap, err := loadSnapshot([]string{filepath.Join(caseDir, "rules.yaml")}, streams, newRegistry(""))
	if err != nil {
		t.Fatalf("webhook: loading the rules: %v", err)
	}
	var contexts []string
	if ctx := filepath.Join(caseDir, "context.yaml"); fileExists(ctx) {
		contexts = []string{ctx}
	}
	objects, err := resolverFor(contexts, streams)
	if err != nil {
		t.Fatalf("webhook: loading the context: %v", err)
	}
	docs, err := source.ReadPaths([]string{filepath.Join(caseDir, "object.yaml")}, nil)
	if err != nil || len(docs) != 1 {
		t.Fatalf("webhook: object.yaml: want one object, got %d (%v)", len(docs), err)
	}
	operation, err := parseOperation(op)
	if err != nil {
		t.Fatal(err)
	}
	a := newAdmission(docs[0].Object, "default")
	res, err := runner.NewWebhook(snap, objects).Run(context.Background(), runner.Request{Operation: operation, Namespace: a.ns, Object: a.obj})
	if err != nil {
		t.Fatalf("webhook: %v", err)
	}
	switch {
	case res.Allowed && !m.Allowed && strings.Contains(m.Stderr, "invalid after the rules:"):
		// The webhook admits; the API server refuses the result, as apply
		// says.
	case res.Allowed != m.Allowed:
		t.Errorf("webhook: allowed %v, apply %v (%s)", res.Allowed, m.Allowed, res.Denial)
	case !res.Allowed && res.Denial != m.Denial:
		t.Errorf("webhook: denial %q, apply %q", res.Denial, m.Denial)
	case res.Allowed && !value.Equal(res.Object, m.Object):
		t.Errorf("webhook: object differs from apply's (-apply +webhook):\n%s", cmp.Diff(m.Object, res.Object))
	}
}

// labels returns obj's metadata.labels.
func labels(obj any) map[string]any {
	m, _ := obj.(map[string]any)
	meta, _ := m["metadata"].(map[string]any)
	l, _ := meta["labels"].(map[string]any)
	return l
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// compareRealworld compares as compare.py does: invalid against invalid;
// else admitted or not; the denial text exactly; the admitted object as a
// JSON value (numbers by value). It returns the differences.
func compareRealworld(e, m realworldResult) []string {
	switch {
	case e.Invalid || m.Invalid:
		if e.Invalid != m.Invalid {
			return []string{fmt.Sprintf("invalid: KubeMod %v (%s) | modwright %v (%s)", e.Invalid, e.Error, m.Invalid, m.Error)}
		}
	case e.Allowed != m.Allowed:
		return []string{fmt.Sprintf("allowed: KubeMod %v (%s) | modwright %v (%s)", e.Allowed, e.Denial, m.Allowed, m.Denial)}
	case !e.Allowed:
		if e.Denial != m.Denial {
			return []string{fmt.Sprintf("denial: KubeMod %q | modwright %q", e.Denial, m.Denial)}
		}
	case !value.Equal(e.Object, m.Object):
		return []string{"object (-KubeMod +modwright):\n" + cmp.Diff(e.Object, m.Object)}
	}
	return nil
}
