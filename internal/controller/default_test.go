package controller

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/kinitiras"
	"github.com/modwright/modwright/internal/kinds/modrule"
	"github.com/modwright/modwright/internal/rules"
)

// TestDefaultHandler: the rules' mutating webhook renders a kinitiras
// policy's templates into renderedCue (as kinitiras' policy webhook), and
// refuses one that does not render; other kinds pass untouched.
func TestDefaultHandler(t *testing.T) {
	h := DefaultHandler{Kinds: kinds.NewRegistry(modrule.NewKind(""), kinitiras.NewClusterValidatePolicyKind(), kinitiras.NewOverridePolicyKind())}
	ctx := context.Background()
	req := func(op rules.Operation, ns, text string) *engine.Request {
		return &engine.Request{Operation: op, Namespace: ns, ObjectJSON: []byte(text)}
	}
	const cvp = `{"apiVersion": "policy.kcloudlabs.io/v1alpha1", "kind": "ClusterValidatePolicy", "metadata": {"name": "v"},
		"spec": {"validateRules": [{"cue": "", "template": {"type": "condition", "condition": {"cond": "Exist", "message": "m",
		"dataRef": {"from": "current", "path": "/metadata/annotations/no-delete"}}}}]}}`
	v := h.Admit(ctx, req(rules.Create, "", cvp))
	if !v.Allowed {
		t.Fatalf("refused: %+v", v)
	}
	var ops []kinitiras.PatchOp
	if err := json.Unmarshal(v.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	if len(ops) != 2 || ops[0].Path != "/spec/validateRules/0/template/condition/affectMode" || ops[0].Value != "reject" ||
		ops[1].Path != "/spec/validateRules/0/renderedCue" || !strings.Contains(ops[1].Value.(string), "validate:") {
		t.Errorf("patch %s", v.Patch)
	}
	// The namespace of an OverridePolicy may be only in the request.
	const op = `{"apiVersion": "policy.kcloudlabs.io/v1alpha1", "kind": "OverridePolicy", "metadata": {"name": "o"},
		"spec": {"overrideRules": [{"overriders": {"template": {"type": "labels", "operation": "upsert", "path": "a", "value": {"string": "b"}}}}]}}`
	v = h.Admit(ctx, req(rules.Update, "team", op))
	if v.Allowed || v.Code != 422 || !strings.Contains(v.Message, "OverridePolicy team/o is invalid: spec.overrideRules[0].overriders.template.operation") {
		t.Errorf("a template that does not render: %+v", v)
	}
	if v := h.Admit(ctx, req(rules.Delete, "team", op)); !v.Allowed || v.Patch != nil {
		t.Errorf("DELETE: %+v", v)
	}
	mr := `{"apiVersion": "api.kubemod.io/v1beta1", "kind": "ModRule", "metadata": {"name": "m", "namespace": "team"}, "spec": {"type": "Patch", "match": [{"select": "$.kind"}]}}`
	if v := h.Admit(ctx, req(rules.Create, "team", mr)); !v.Allowed || v.Patch != nil {
		t.Errorf("a ModRule: %+v", v)
	}
}
