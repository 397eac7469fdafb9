package v1beta1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateStructure checks everything about a rule that needs no compiling:
// required fields, enums, the executionTier range, and which fields go with
// which rule type. Expressions, regexes and templates are checked by
// internal/rules, which calls this first.
func (r *ModRule) ValidateStructure() field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	s := &r.Spec

	switch s.Type {
	case ModRuleTypePatch, ModRuleTypeReject:
	case "":
		errs = append(errs, field.Required(spec.Child("type"), "must be Patch or Reject"))
	default:
		errs = append(errs, field.NotSupported(spec.Child("type"), s.Type, []string{string(ModRuleTypePatch), string(ModRuleTypeReject)}))
	}
	if s.ExecutionTier < MinExecutionTier || s.ExecutionTier > MaxExecutionTier {
		errs = append(errs, field.Invalid(spec.Child("executionTier"), s.ExecutionTier,
			fmt.Sprintf("must be between %d and %d", MinExecutionTier, MaxExecutionTier)))
	}
	seen := map[ModRuleAdmissionOperation]bool{}
	for i, op := range s.AdmissionOperations {
		p := func() *field.Path { return spec.Child("admissionOperations").Index(i) } // on errors only
		switch op {
		case ModRuleAdmissionOperationCreate, ModRuleAdmissionOperationUpdate, ModRuleAdmissionOperationDelete:
			if seen[op] {
				errs = append(errs, field.Duplicate(p(), op))
			}
			seen[op] = true
		default:
			errs = append(errs, field.NotSupported(p(), op, []string{"CREATE", "UPDATE", "DELETE"}))
		}
	}
	if len(s.Match) == 0 {
		errs = append(errs, field.Required(spec.Child("match"), "at least one criterion is required"))
	}
	for i := range s.Match {
		m := &s.Match[i]
		p := func() *field.Path { return spec.Child("match").Index(i) }
		if m.Select == "" {
			errs = append(errs, field.Required(p().Child("select"), ""))
		}
		if m.MatchFor != nil && *m.MatchFor != MatchForTypeAny && *m.MatchFor != MatchForTypeAll {
			errs = append(errs, field.NotSupported(p().Child("matchFor"), *m.MatchFor, []string{"Any", "All"}))
		}
		set := 0
		for _, b := range []bool{m.MatchValue != nil, len(m.MatchValues) > 0, m.MatchRegex != nil} {
			if b {
				set++
			}
		}
		if set > 1 {
			errs = append(errs, field.Invalid(p(), "", "use only one of matchValue, matchValues and matchRegex"))
		}
	}

	switch s.Type {
	case ModRuleTypePatch:
		if len(s.Patch) == 0 {
			errs = append(errs, field.Required(spec.Child("patch"), "a Patch rule needs at least one operation"))
		}
		if s.RejectMessage != nil {
			errs = append(errs, field.Forbidden(spec.Child("rejectMessage"), "only Reject rules have a rejectMessage"))
		}
	case ModRuleTypeReject:
		if len(s.Patch) > 0 {
			errs = append(errs, field.Forbidden(spec.Child("patch"), "only Patch rules have patch operations"))
		}
	}
	for i := range s.Patch {
		po := &s.Patch[i]
		p := func() *field.Path { return spec.Child("patch").Index(i) }
		switch po.Operation {
		case PatchOperationTypeAdd, PatchOperationTypeReplace, PatchOperationTypeRemove:
		case "":
			errs = append(errs, field.Required(p().Child("op"), "must be add, replace or remove"))
		default:
			errs = append(errs, field.NotSupported(p().Child("op"), po.Operation, []string{"add", "replace", "remove"}))
		}
		if po.Path == "" {
			errs = append(errs, field.Required(p().Child("path"), ""))
		}
		if po.Select != nil && *po.Select == "" {
			errs = append(errs, field.Invalid(p().Child("select"), "", "must not be empty when set"))
		}
	}
	return errs
}
