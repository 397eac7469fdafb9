package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func copyStringPtr(p *string) *string {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// DeepCopyInto copies the receiver into out.
func (in *MatchItem) DeepCopyInto(out *MatchItem) {
	*out = *in
	if in.MatchFor != nil {
		v := *in.MatchFor
		out.MatchFor = &v
	}
	out.MatchValue = copyStringPtr(in.MatchValue)
	if in.MatchValues != nil {
		out.MatchValues = append([]string(nil), in.MatchValues...)
	}
	out.MatchRegex = copyStringPtr(in.MatchRegex)
}

// DeepCopyInto copies the receiver into out.
func (in *PatchOperation) DeepCopyInto(out *PatchOperation) {
	*out = *in
	out.Select = copyStringPtr(in.Select)
	out.Value = copyStringPtr(in.Value)
}

// DeepCopyInto copies the receiver into out.
func (in *ModRuleSpec) DeepCopyInto(out *ModRuleSpec) {
	*out = *in
	if in.AdmissionOperations != nil {
		out.AdmissionOperations = append([]ModRuleAdmissionOperation(nil), in.AdmissionOperations...)
	}
	if in.Match != nil {
		out.Match = make([]MatchItem, len(in.Match))
		for i := range in.Match {
			in.Match[i].DeepCopyInto(&out.Match[i])
		}
	}
	if in.Patch != nil {
		out.Patch = make([]PatchOperation, len(in.Patch))
		for i := range in.Patch {
			in.Patch[i].DeepCopyInto(&out.Patch[i])
		}
	}
	out.RejectMessage = copyStringPtr(in.RejectMessage)
	out.TargetNamespaceRegex = copyStringPtr(in.TargetNamespaceRegex)
}

// DeepCopyInto copies the receiver into out.
func (in *ModRuleStatus) DeepCopyInto(out *ModRuleStatus) {
	*out = *in
	if in.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(in.Conditions))
		for i := range in.Conditions {
			in.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// DeepCopyInto copies the receiver into out.
func (in *ModRule) DeepCopyInto(out *ModRule) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	in.Spec.DeepCopyInto(&out.Spec)
	in.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a deep copy of the rule.
func (in *ModRule) DeepCopy() *ModRule {
	if in == nil {
		return nil
	}
	out := new(ModRule)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *ModRule) DeepCopyObject() runtime.Object { return in.DeepCopy() }

// DeepCopyInto copies the receiver into out.
func (in *ModRuleList) DeepCopyInto(out *ModRuleList) {
	*out = *in
	out.TypeMeta = in.TypeMeta
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]ModRule, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a deep copy of the list.
func (in *ModRuleList) DeepCopy() *ModRuleList {
	if in == nil {
		return nil
	}
	out := new(ModRuleList)
	in.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (in *ModRuleList) DeepCopyObject() runtime.Object { return in.DeepCopy() }

var (
	_ runtime.Object = (*ModRule)(nil)
	_ runtime.Object = (*ModRuleList)(nil)
)
