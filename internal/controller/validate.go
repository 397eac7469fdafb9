package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/rules"
)

// ValidatePath is where the ModRule validating webhook is served.
const ValidatePath = "/validate-modrule"

// ValidateHandler refuses ModRules that do not compile, with one field
// error per problem (field path, column, message), before they are stored.
// It compiles exactly as the rule source does.
type ValidateHandler struct{}

var _ admission.Handler = ValidateHandler{}

// Handle validates a created or updated ModRule.
func (ValidateHandler) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	var mr v1beta1.ModRule
	if err := json.Unmarshal(req.Object.Raw, &mr); err != nil {
		return admission.Errored(400, fmt.Errorf("undecodable ModRule: %w", err))
	}
	if mr.Namespace == "" {
		mr.Namespace = req.Namespace
	}
	_, err := rules.Compile(&mr)
	if err == nil {
		return admission.Allowed("")
	}
	return Invalid(&mr, err)
}

// Invalid is the denial for a rule that does not compile: an Invalid
// status with one cause per field error, as the API server reports its own
// validation errors.
func Invalid(mr *v1beta1.ModRule, err error) admission.Response {
	st := &metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnprocessableEntity,
		Reason:  metav1.StatusReasonInvalid,
		Message: fmt.Sprintf("ModRule %s is invalid: %s", mr.NamespacedName(), FieldErrors(err)),
		Details: &metav1.StatusDetails{Name: mr.Name, Group: v1beta1.Group, Kind: "ModRule"},
	}
	var ce *rules.CompileError
	if errors.As(err, &ce) {
		for _, fe := range ce.Errors {
			msg := fe.Msg
			if fe.Pos >= 0 {
				msg = fmt.Sprintf("column %d: %s", fe.Pos+1, fe.Msg)
			}
			st.Details.Causes = append(st.Details.Causes, metav1.StatusCause{
				Type: metav1.CauseTypeFieldValueInvalid, Field: fe.Field, Message: msg,
			})
		}
	}
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: st}}
}
