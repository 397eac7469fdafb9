package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
	"github.com/modwright/modwright/internal/webhook"
)

// ValidatePath is where the rules' validating webhook is served (one path
// for every kind of the registry).
const ValidatePath = "/validate-rule"

// ValidateHandler refuses rules that do not compile, with one field error
// per problem (field path, column, message), before they are stored. It
// compiles exactly as the rule source does, through the kind of the
// registry that owns the object.
type ValidateHandler struct {
	Kinds *kinds.Registry
}

var _ webhook.AdmitFunc = ValidateHandler{}.Admit

// Admit validates a created or updated rule.
func (h ValidateHandler) Admit(_ context.Context, req *engine.Request) webhook.Verdict {
	k, m, answer := ruleOf(h.Kinds, req)
	if answer != nil {
		return *answer
	}
	if _, err := k.Compile(m); err != nil {
		return Invalid(k, m, err)
	}
	if a, ok := k.(kinds.Admitter); ok {
		if err := a.Check(m); err != nil {
			return Invalid(k, m, err)
		}
	}
	return webhook.Verdict{Allowed: true}
}

// ruleOf is the rule a created or updated review carries and its kind;
// answer is set when the webhook answers without it (another operation,
// an undecodable body, a kind modwright does not serve).
func ruleOf(reg *kinds.Registry, req *engine.Request) (k kinds.Kind, m *kinds.Manifest, answer *webhook.Verdict) {
	if req.Operation != rules.Create && req.Operation != rules.Update {
		return nil, nil, &webhook.Verdict{Allowed: true}
	}
	m, refused := manifestOf(req)
	if refused != nil {
		return nil, nil, refused
	}
	if k = reg.For(m); k == nil {
		return nil, nil, &webhook.Verdict{Allowed: true} // not a rule kind modwright serves
	}
	return k, m, nil
}

// manifestOf is the rule a review carries, with the namespace the API
// server will give it; a body that is not a JSON object is refused.
func manifestOf(req *engine.Request) (*kinds.Manifest, *webhook.Verdict) {
	tree, err := value.Decode(req.ObjectJSON)
	obj, _ := tree.(map[string]any)
	if err != nil || obj == nil {
		kind := req.Kind.Kind
		if kind == "" {
			kind = "rule"
		}
		return nil, &webhook.Verdict{Code: http.StatusBadRequest, Message: fmt.Sprintf("undecodable %s: not a JSON object", kind)}
	}
	m := &kinds.Manifest{Object: obj, JSON: req.ObjectJSON}
	if m.Namespace() == "" && req.Namespace != "" {
		// The API server fills the namespace of a namespaced object
		// from the request after admission: the rule's key has it.
		md, _ := obj["metadata"].(map[string]any)
		md = maps.Clone(md)
		if md == nil {
			md = map[string]any{}
		}
		md["namespace"] = req.Namespace
		obj = maps.Clone(obj)
		obj["metadata"] = md
		data, err := value.AppendJSON(nil, obj)
		if err != nil {
			return nil, &webhook.Verdict{Code: http.StatusBadRequest, Message: err.Error()}
		}
		m = &kinds.Manifest{Object: obj, JSON: data}
	}
	return m, nil
}

// Invalid is the denial for a rule that does not compile: an Invalid
// status with one cause per field error, as the API server reports its own
// validation errors.
func Invalid(k kinds.Kind, m *kinds.Manifest, err error) webhook.Verdict {
	v := webhook.Verdict{
		Code:    http.StatusUnprocessableEntity,
		Reason:  string(metav1.StatusReasonInvalid),
		Message: fmt.Sprintf("%s %s is invalid: %s", k.Name(), m.Key(), FieldErrors(withoutName(k.Name(), m.Key(), err))),
		Details: &webhook.StatusDetails{Name: m.Name(), Group: k.Group(), Kind: k.Name()},
	}
	var ce *rules.CompileError
	if errors.As(err, &ce) {
		for _, fe := range ce.Errors {
			msg := fe.Msg
			if fe.Pos >= 0 {
				msg = fmt.Sprintf("column %d: %s", fe.Pos+1, fe.Msg)
			}
			v.Details.Causes = append(v.Details.Causes, webhook.StatusCause{
				Type: string(metav1.CauseTypeFieldValueInvalid), Field: fe.Field, Message: msg,
			})
		}
	}
	return v
}
