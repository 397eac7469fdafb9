package runner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/runner"
)

// fixed is a Driver that answers every request with a copy of one result.
type fixed runner.Result

func (f *fixed) Run(context.Context, runner.Request) (*runner.Result, error) {
	r := runner.Result(*f)
	return &r, nil
}

// TestChainStages: the chain names the step that refused an object, and
// checks what mutating admission made of it only when the operation
// stores it.
func TestChainStages(t *testing.T) {
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns"}}
	badLabel := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns",
		"labels": map[string]any{"bad key!": "v"}}}
	tests := []struct {
		name      string
		op        rules.Operation
		rules     runner.Result
		allowed   bool
		stage     runner.Stage
		denialPfx string
	}{
		{"admitted", rules.Create, runner.Result{Allowed: true, Object: obj}, true, "", ""},
		{"denied by the rules", rules.Create, runner.Result{Denial: "no"}, false, runner.StageRules, "no"},
		{"invalid after the rules", rules.Update, runner.Result{Allowed: true, Object: badLabel}, false, runner.StageInvalidAfter, "invalid after the rules: "},
		{"a DELETE is not stored", rules.Delete, runner.Result{Allowed: true, Object: badLabel}, true, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			drv := fixed(tt.rules)
			res, err := runner.NewChain(&drv, runner.ChainOptions{}).Run(context.Background(), runner.Request{Operation: tt.op, Namespace: "ns", Object: obj})
			if err != nil {
				t.Fatal(err)
			}
			if res.Allowed != tt.allowed || res.Stage != tt.stage {
				t.Fatalf("allowed %v stage %q, want %v %q (denial %q)", res.Allowed, res.Stage, tt.allowed, tt.stage, res.Denial)
			}
			if !tt.allowed && !strings.HasPrefix(res.DenialText(), tt.denialPfx) {
				t.Errorf("denial %q, want it to start with %q", res.DenialText(), tt.denialPfx)
			}
			if !tt.allowed && (res.Object != nil || res.Patch != nil) {
				t.Errorf("a refusal carries the object %v", res.Object)
			}
		})
	}
}
