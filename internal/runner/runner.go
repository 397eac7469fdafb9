package runner

import (
	"context"
	"fmt"
	"strings"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/patch"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// Request is one object to admit offline.
type Request struct {
	// Operation is CREATE, UPDATE or DELETE.
	Operation rules.Operation
	// Namespace is the namespace the object is admitted in, "" for a
	// cluster-scoped one; the caller decides it (the object's own
	// metadata.namespace, or a default for namespaced kinds).
	Namespace string
	// Object is the object under admission: the object of a CREATE or
	// UPDATE, the old object of a DELETE. It is never modified.
	Object map[string]any
	// Old is the old object of an UPDATE (apply --old, a suite case's
	// old); nil for none, as the CLI admits an UPDATE without --old. It is
	// never modified, and must be nil for CREATE and DELETE.
	Old map[string]any
	// User is the requester (offline: --user-info, a suite's UserInfo
	// context document); zero for an anonymous request.
	User engine.UserInfo
	// Payload: Object is a JSON payload, not a Kubernetes object (Kyverno's
	// jsonPayloads): only the rules that evaluate payloads see it
	// (engine.Request.Payload); Operation is CREATE, Namespace empty.
	Payload bool
}

// Result is what one request gave.
type Result struct {
	// Allowed reports whether the object was admitted.
	Allowed bool
	// Denial is the message of a denied request (Decision.DenialMessage,
	// the webhook's status.message); empty when admitted.
	Denial string
	// Object is the admitted object after the rules; nil when denied.
	Object any
	// Patch turns the input object into Object (RFC 6902); empty when
	// nothing changed or the request was denied.
	Patch []patch.Operation
	// Warnings are what the API server shows the client: the rule errors,
	// one text each (engine.RuleError's), in evaluation order, then the
	// admission warnings of the rules ("Kind namespace/name: message",
	// engine.Warning). The webhook bounds them (see Diff).
	Warnings []string
	// Decision is the engine's decision, set by the Engine driver only:
	// what a caller needs beyond the webhook's answer (the rejections one
	// by one, the typed rule errors, the trace).
	Decision *engine.Decision
	// Refusal is the engine's error behind a Denial the webhook answers
	// with code 500 (engine.Refusal: a rule failing under failurePolicy
	// Fail, an undecidable Reject rule); Engine driver only.
	Refusal error

	// What a Chain adds: the step that refused the object ("" when
	// admitted), the fields the rules added that its CRD's schema does not
	// know (the API server prunes them), the warnings of the schema check
	// and of the ValidatingAdmissionPolicies (also in Warnings, after the
	// rules'), and the steps that looked at the object.
	Stage          Stage
	Pruned         []string
	SchemaWarnings []string
	PolicyWarnings []string
	Checked        Checks
}

// DenialText is the denial as the API server words it: the invalid
// stages name themselves ("invalid: ...", "invalid after the rules:
// ..."); the others are the denial's message.
func (r *Result) DenialText() string {
	if r.Stage == StageInvalid || r.Stage == StageInvalidAfter {
		return string(r.Stage) + ": " + r.Denial
	}
	return r.Denial
}

// Driver evaluates one request against the snapshot it was built with.
// The error is an evaluation the driver could not complete (an invalid
// request, the deadline, a rule reading data no reader gives offline);
// a rule failing under failurePolicy Fail or an undecidable Reject rule
// is a denial, as the webhook answers it (engine.Refusal); other rule
// errors are warnings in the Result.
type Driver interface {
	Run(ctx context.Context, req Request) (*Result, error)
}

// Attributes builds the engine request from what is known offline: the
// operation, the namespace, the object's name and kind (group and version
// from its apiVersion). The object is the old object on DELETE; an UPDATE
// carries Old as its old object. The resource, the user, the uid and the
// options are unknown without an API server and left empty.
func Attributes(req Request) engine.Request {
	if req.Payload {
		return engine.Request{Operation: rules.Create, Object: req.Object, UserInfo: req.User, Payload: true}
	}
	var r engine.Request
	if req.Operation == rules.Update {
		r = kinds.OfflineUpdate(req.Object, req.Old, req.Namespace)
	} else {
		r = kinds.OfflineRequest(req.Object, req.Namespace, req.Operation)
	}
	r.UserInfo = req.User
	return r
}

// Options are the engine's options for a context: its objects, and the
// readers it also serves (the CLI's context serves recorded API and HTTP
// responses, the requester's roles and objects of any kind).
func Options(objects engine.ObjectReader) engine.Options {
	o := engine.Options{Objects: objects}
	o.API, _ = objects.(engine.APIReader)
	o.Roles, _ = objects.(engine.RoleReader)
	o.Kinds, _ = objects.(engine.KindReader)
	o.HTTP, _ = objects.(engine.HTTPReader)
	o.Images, _ = objects.(engine.ImageReader)
	o.Globals, _ = objects.(engine.GlobalContextReader)
	o.Graph, _ = objects.(engine.GraphReader)
	o.Inventory, _ = objects.(engine.InventoryReader)
	return o
}

// WarningText is how an admission warning reads in Result.Warnings (the
// webhook's warning without its "modwright: " prefix).
func WarningText(w engine.Warning) string {
	return w.Kind + " " + w.Rule + ": " + w.Message
}

// Diff describes how two results differ, "" when they agree: admission,
// denial, object, patch and warnings. A warning matches when equal, or
// when one is the webhook's truncation of the other (ending in "…"); the
// webhook returns at most maxWarnings of them and then a count.
func Diff(a, b *Result) string {
	var d []string
	if a.Allowed != b.Allowed {
		d = append(d, fmt.Sprintf("allowed: %v != %v", a.Allowed, b.Allowed))
	}
	if a.Denial != b.Denial {
		d = append(d, fmt.Sprintf("denial: %q != %q", a.Denial, b.Denial))
	}
	if !value.Equal(a.Object, b.Object) {
		d = append(d, fmt.Sprintf("object: %s != %s", jsonText(a.Object), jsonText(b.Object)))
	}
	if pa, pb := patchText(a.Patch), patchText(b.Patch); pa != pb {
		d = append(d, fmt.Sprintf("patch: %s != %s", pa, pb))
	}
	if !sameWarnings(a.Warnings, b.Warnings) {
		d = append(d, fmt.Sprintf("warnings: %q != %q", a.Warnings, b.Warnings))
	}
	return strings.Join(d, "; ")
}

// maxWarnings is how many rule errors the webhook returns one by one
// (webhook's maxWarnings).
const maxWarnings = 8

func sameWarnings(a, b []string) bool {
	if len(a) > maxWarnings || len(b) > maxWarnings {
		if len(a) <= maxWarnings || len(b) <= maxWarnings {
			return false
		}
		a, b = a[:maxWarnings], b[:maxWarnings]
	}
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameWarning(a[i], b[i]) {
			return false
		}
	}
	return true
}

func sameWarning(a, b string) bool {
	if a == b {
		return true
	}
	if p, ok := strings.CutSuffix(a, "…"); ok && strings.HasPrefix(b, p) {
		return true
	}
	if p, ok := strings.CutSuffix(b, "…"); ok && strings.HasPrefix(a, p) {
		return true
	}
	return false
}

func jsonText(v any) string {
	b, err := value.AppendJSON(nil, v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

func patchText(ops []patch.Operation) string {
	if len(ops) == 0 {
		return "[]"
	}
	b, err := patch.AppendPatch(nil, ops)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}
