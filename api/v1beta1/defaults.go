package v1beta1

// Default fills the fields KubeMod defaults: admissionOperations to CREATE and
// UPDATE, and matchFor to Any. executionTier's zero value is its default.
func (r *ModRule) Default() {
	if len(r.Spec.AdmissionOperations) == 0 {
		r.Spec.AdmissionOperations = []ModRuleAdmissionOperation{
			ModRuleAdmissionOperationCreate, ModRuleAdmissionOperationUpdate,
		}
	}
	for i := range r.Spec.Match {
		if r.Spec.Match[i].MatchFor == nil {
			any := MatchForTypeAny
			r.Spec.Match[i].MatchFor = &any
		}
	}
}
