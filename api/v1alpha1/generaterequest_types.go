package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KindGenerateRequest is the operator's record of generate work not done
// yet.
const KindGenerateRequest = "GenerateRequest"

// GenerateRequest records one piece of the work generate rules ask for
// (create, delete or patch an object for a trigger) from when a replica
// takes it until it is done, so that work a stopped replica had queued is
// done by the leader. The operator writes and deletes them in its own
// namespace; they are not meant to be written by hand.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=genreq,categories=modwright
// +kubebuilder:printcolumn:name="ACTION",type="string",JSONPath=".spec.action"
// +kubebuilder:printcolumn:name="KIND",type="string",JSONPath=".spec.object.kind"
// +kubebuilder:printcolumn:name="OBJECT",type="string",JSONPath=".spec.object.name"
// +kubebuilder:printcolumn:name="TRIGGER",type="string",JSONPath=".spec.trigger.name"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
type GenerateRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GenerateRequestSpec `json:"spec"`
}

// GenerateRequestSpec is what to do and for which trigger. The object's
// content is not recorded: the trigger is evaluated again when the record
// is taken up.
type GenerateRequestSpec struct {
	// Action: create (or apply, when synchronized) the object a rule
	// generates for the trigger, delete a synchronized object of a
	// deleted trigger, or patch an existing object a rule changes.
	// +kubebuilder:validation:Enum=create;delete;patch
	Action string `json:"action"`
	// Object is the object acted on.
	Object ObjectReference `json:"object"`
	// Rule names the policy and rule that asked for it.
	// +optional
	Rule string `json:"rule,omitempty"`
	// Synchronize: the rule keeps the object in sync with its trigger.
	// +optional
	Synchronize bool `json:"synchronize,omitempty"`
	// Trigger is the object whose admission asked for it.
	Trigger ObjectReference `json:"trigger"`
	// TriggerGone: the trigger was deleted (a patch of existing objects
	// asked for by a DELETE).
	// +optional
	TriggerGone bool `json:"triggerGone,omitempty"`
	// Replica is the operator's pod that took the work.
	// +optional
	Replica string `json:"replica,omitempty"`
}

// ObjectReference names an object (uid: the one of that uid only).
type ObjectReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// +optional
	UID string `json:"uid,omitempty"`
}

// GenerateRequestList is a list of GenerateRequests.
//
// +kubebuilder:object:root=true
type GenerateRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GenerateRequest `json:"items"`
}
