package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/webhook"
)

// ValidatePath is where the ModRule validating webhook is served.
const ValidatePath = "/validate-modrule"

// ValidateHandler refuses ModRules that do not compile, with one field
// error per problem (field path, column, message), before they are stored.
// It compiles exactly as the rule source does.
type ValidateHandler struct{}

var _ webhook.AdmitFunc = ValidateHandler{}.Admit

// Admit validates a created or updated ModRule.
func (ValidateHandler) Admit(_ context.Context, req *engine.Request) webhook.Verdict {
	if req.Operation != rules.Create && req.Operation != rules.Update {
		return webhook.Verdict{Allowed: true}
	}
	var mr v1beta1.ModRule
	if err := json.Unmarshal(req.ObjectJSON, &mr); err != nil {
		return webhook.Verdict{Code: http.StatusBadRequest, Message: fmt.Errorf("undecodable ModRule: %w", err).Error()}
	}
	if mr.Namespace == "" {
		mr.Namespace = req.Namespace
	}
	_, err := rules.Compile(&mr)
	if err == nil {
		return webhook.Verdict{Allowed: true}
	}
	return Invalid(&mr, err)
}

// Invalid is the denial for a rule that does not compile: an Invalid
// status with one cause per field error, as the API server reports its own
// validation errors.
func Invalid(mr *v1beta1.ModRule, err error) webhook.Verdict {
	v := webhook.Verdict{
		Code:    http.StatusUnprocessableEntity,
		Reason:  string(metav1.StatusReasonInvalid),
		Message: fmt.Sprintf("ModRule %s is invalid: %s", mr.NamespacedName(), FieldErrors(err)),
		Details: &webhook.StatusDetails{Name: mr.Name, Group: v1beta1.Group, Kind: "ModRule"},
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
