package kinitiras_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/kinitiras"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/testtool"
	"github.com/modwright/modwright/internal/value"
)

func readCases(t *testing.T, name string, v any) {
	t.Helper()
	dir := testtool.ConformanceDir(t, "kinitiras", "MODWRIGHT_KINITIRAS_DIR", name)
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

func compileAll(t *testing.T, raws []json.RawMessage) []*kinitiras.Policy {
	t.Helper()
	var ps []*kinitiras.Policy
	for _, raw := range raws {
		p, err := kinitiras.Compile(decodeObj(t, raw))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

func optObj(t *testing.T, raw json.RawMessage) map[string]any {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return decodeObj(t, raw)
}

func TestConformanceOverride(t *testing.T) {
	var file struct {
		Cases []struct {
			Name      string            `json:"name"`
			Policies  []json.RawMessage `json:"policies"`
			Object    json.RawMessage   `json:"object"`
			OldObject json.RawMessage   `json:"oldObject"`
			Operation string            `json:"operation"`
			Expected  struct {
				PatchedObject json.RawMessage `json:"patchedObject"`
				Cluster       []struct {
					PolicyName string `json:"policyName"`
				} `json:"appliedClusterOverridePolicies"`
				Namespaced []struct {
					PolicyName string `json:"policyName"`
				} `json:"appliedOverridePolicies"`
			} `json:"expected"`
		} `json:"cases"`
	}
	readCases(t, "override-cases.json", &file)
	if len(file.Cases) == 0 {
		t.Fatal("no override cases")
	}
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			got, cluster, ns, err := kinitiras.ApplyOverrides(context.Background(), nil, compileAll(t, c.Policies), decodeObj(t, c.Object), optObj(t, c.OldObject), rules.Operation(c.Operation))
			if err != nil {
				t.Fatal(err)
			}
			want := decodeObj(t, c.Expected.PatchedObject)
			if !value.Equal(want, any(got)) {
				t.Errorf("patched object (-kinitiras +ours):\n%s", cmp.Diff(want, got))
			}
			names := func(as []kinitiras.Applied) []string {
				var out []string
				for _, a := range as {
					out = append(out, a.PolicyName)
				}
				return out
			}
			var wc, wn []string
			for _, a := range c.Expected.Cluster {
				wc = append(wc, a.PolicyName)
			}
			for _, a := range c.Expected.Namespaced {
				wn = append(wn, a.PolicyName)
			}
			if d := cmp.Diff(wc, names(cluster)); d != "" {
				t.Errorf("applied cluster policies (-kinitiras +ours):\n%s", d)
			}
			if d := cmp.Diff(wn, names(ns)); d != "" {
				t.Errorf("applied policies (-kinitiras +ours):\n%s", d)
			}
		})
	}
}

func TestConformanceValidate(t *testing.T) {
	var file struct {
		Cases []struct {
			Name      string            `json:"name"`
			Policies  []json.RawMessage `json:"policies"`
			Object    json.RawMessage   `json:"object"`
			OldObject json.RawMessage   `json:"oldObject"`
			Operation string            `json:"operation"`
			Expected  struct {
				Allowed bool   `json:"allowed"`
				Message string `json:"message"`
			} `json:"expected"`
		} `json:"cases"`
	}
	readCases(t, "validate-cases.json", &file)
	if len(file.Cases) != 3 {
		t.Fatalf("%d cases; the data has 3", len(file.Cases))
	}
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			ok, msg, err := kinitiras.Validate(context.Background(), nil, compileAll(t, c.Policies), decodeObj(t, c.Object), optObj(t, c.OldObject), rules.Operation(c.Operation))
			if err != nil {
				t.Fatal(err)
			}
			if ok != c.Expected.Allowed || msg != c.Expected.Message {
				t.Errorf("Validate = %v %q, kinitiras %v %q", ok, msg, c.Expected.Allowed, c.Expected.Message)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	p := map[string]any{"apiVersion": "policy.kcloudlabs.io/v1alpha1", "kind": "ClusterValidatePolicy",
		"metadata": map[string]any{"name": "bad"},
		"spec":     map[string]any{"validateRules": []any{map[string]any{"cue": "validate: {"}}}}
	_, err := kinitiras.Compile(p)
	var ce *rules.CompileError
	if !errors.As(err, &ce) || len(ce.Errors) != 1 || ce.Errors[0].Field != "spec.validateRules[0].cue" || ce.Errors[0].Pos < 0 {
		t.Fatalf("error %v, want a positioned compile error of spec.validateRules[0].cue", err)
	}
	if !strings.Contains(err.Error(), "bad") {
		t.Errorf("error %v does not name the policy", err)
	}
}

// TestOwnNamespace: an OverridePolicy applies to objects of its own
// namespace only (kinitiras applied one of another namespace whose
// selector matched: a documented deviation).
func TestOwnNamespace(t *testing.T) {
	pol := map[string]any{"kind": "OverridePolicy", "metadata": map[string]any{"name": "p", "namespace": "other"},
		"spec": map[string]any{"overrideRules": []any{map[string]any{"overriders": map[string]any{
			"plaintext": []any{map[string]any{"op": "add", "path": "/metadata/labels", "value": map[string]any{"x": "y"}}}}}}}}
	p, err := kinitiras.Compile(pol)
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "default"}}
	got, _, applied, err := kinitiras.ApplyOverrides(context.Background(), nil, []*kinitiras.Policy{p}, obj, nil, rules.Create)
	if err != nil || len(applied) != 0 || got["metadata"].(map[string]any)["labels"] != nil {
		t.Errorf("a policy of another namespace applied: %v %v %v", got, applied, err)
	}
	obj["metadata"].(map[string]any)["namespace"] = "other"
	got, _, applied, err = kinitiras.ApplyOverrides(context.Background(), nil, []*kinitiras.Policy{p}, obj, nil, rules.Create)
	if err != nil || len(applied) != 1 || got["metadata"].(map[string]any)["labels"] == nil {
		t.Errorf("the policy of the object's namespace did not apply: %v %v %v", got, applied, err)
	}
}

func TestScopeReason(t *testing.T) {
	compile := func(kind, ns, spec string) *kinitiras.Rule {
		t.Helper()
		m := map[string]any{"apiVersion": "policy.kcloudlabs.io/v1alpha1", "kind": kind, "metadata": map[string]any{"name": "p"}}
		if ns != "" {
			m["metadata"].(map[string]any)["namespace"] = ns
		}
		var s any
		if err := json.Unmarshal([]byte(spec), &s); err != nil {
			t.Fatal(err)
		}
		m["spec"] = s
		b, _ := json.Marshal(m)
		v, _ := value.Decode(b)
		var k *kinitiras.Kind
		switch kind {
		case kinitiras.KindOverridePolicy:
			k = kinitiras.NewOverridePolicyKind()
		case kinitiras.KindClusterOverride:
			k = kinitiras.NewClusterOverridePolicyKind()
		default:
			k = kinitiras.NewClusterValidatePolicyKind()
		}
		r, err := k.Compile(&kinds.Manifest{Origin: "t", Object: v.(map[string]any), JSON: b})
		if err != nil {
			t.Fatal(err)
		}
		return r.(*kinitiras.Rule)
	}
	op := compile(kinitiras.KindOverridePolicy, "a", `{"resourceSelectors": [{"apiVersion": "v1", "kind": "Pod"}], "overrideRules": [{"targetOperations": ["CREATE"], "overriders": {"plaintext": [{"op": "add", "path": "/x", "value": 1}]}}]}`)
	cvp := compile(kinitiras.KindClusterValidate, "", `{"validateRules": [{"targetOperations": ["DELETE"], "cue": "validate: valid: true"}]}`)
	for _, c := range []struct {
		r        *kinitiras.Rule
		ns, kind string
		op       rules.Operation
		want     string
	}{
		{op, "b", "Pod", rules.Create, "out of scope: an OverridePolicy applies to objects of its own namespace (a) only"},
		{op, "a", "Pod", rules.Delete, "out of scope: an override policy never patches a DELETE"},
		{op, "a", "Pod", rules.Update, "out of scope: no rule's targetOperations include UPDATE"},
		{op, "a", "Service", rules.Create, "out of scope: resourceSelectors name the kinds Pod"},
		{op, "a", "Pod", rules.Create, "in scope: OverridePolicy in the object's namespace a; CREATE; kind Pod"},
		{cvp, "x", "Pod", rules.Delete, "in scope: ClusterValidatePolicy: applies cluster-wide; DELETE; any kind"},
		{cvp, "x", "Pod", rules.Create, "out of scope: no rule's targetOperations include CREATE"},
	} {
		if got := kinds.ScopeReason(c.r, c.r, c.ns, c.kind, c.op, true); got != c.want {
			t.Errorf("%s %s/%s %s: %q, want %q", c.r.Kind, c.ns, c.kind, c.op, got, c.want)
		}
	}
}

// TestRunawayCUE: a program that computes too long is bounded by the
// request's deadline: the override fails with the deadline's error, in
// about the deadline, and does not hang the request.
func TestRunawayCUE(t *testing.T) {
	p, err := kinitiras.Compile(decodeObj(t, json.RawMessage(`{"apiVersion": "policy.kcloudlabs.io/v1alpha1", "kind": "ClusterOverridePolicy",
		"metadata": {"name": "runaway"}, "spec": {"overrideRules": [{"overriders": {"cue":
		"import \"list\"\nobject: _ @tag(object)\n_n: [for i in list.Range(0, object.spec.replicas, 1) for j in list.Range(0, object.spec.replicas, 1) {i * j}]\npatches: [{op: \"add\", path: \"/metadata/labels/n\", value: \"\\(len(_n))\"}]"}}]}}`)))
	if err != nil {
		t.Fatal(err)
	}
	obj := decodeObj(t, json.RawMessage(`{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "p", "labels": {}}, "spec": {"replicas": 200}}`))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, _, err = kinitiras.ApplyOverrides(ctx, nil, []*kinitiras.Policy{p}, obj, nil, rules.Create)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the deadline's (after %v)", err, took)
	}
	if took > 2*time.Second {
		t.Errorf("returned after %v", took)
	}
	t.Logf("bounded after %v: %v", took, err)
}
