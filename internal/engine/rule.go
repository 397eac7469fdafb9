package engine

import (
	"errors"

	"github.com/modwright/modwright/internal/rules"
)

// Phase says when a rule runs: every Mutate rule of every kind first, tier
// by tier, then every Validate rule on the final object. A rule may run in
// both (Mutate|Validate: a Policy with mutations and validations): it is
// applied in its tier, and again on the final object; Handle.Phase says
// which.
type Phase uint8

// Phases.
const (
	Mutate Phase = 1 << iota
	Validate
)

// Has reports whether p includes q.
func (p Phase) Has(q Phase) bool { return p&q != 0 }

func (p Phase) String() string {
	switch p {
	case Mutate:
		return "mutate"
	case Validate:
		return "validate"
	case Mutate | Validate:
		return "mutate+validate"
	}
	return "unknown"
}

// FailurePolicy says what a rule's failure (an error from Match or Apply,
// or Handle.Fail) does to the evaluation.
type FailurePolicy uint8

// Failure policies.
const (
	// FailureDefault is KubeMod's: a failed Mutate rule is skipped and
	// reported (Decision.Errors); a Validate rule that cannot be decided
	// fails the evaluation (ErrUndecided).
	FailureDefault FailurePolicy = iota
	// FailureFail: any failure fails the evaluation (ErrRuleFailed), so
	// the request is denied.
	FailureFail
	// FailureIgnore: any failure is reported (Decision.Errors) and the
	// rule skipped; the others still run.
	FailureIgnore
)

// OpSet is a set of admission operations.
type OpSet uint8

// OpSetOf returns the set of the given operations (unknown ones are
// ignored).
func OpSetOf(ops ...rules.Operation) OpSet {
	var s OpSet
	for _, op := range ops {
		if slot := opSlot(op); slot >= 0 {
			s |= 1 << slot
		}
	}
	return s
}

// Has reports whether op is in the set.
func (s OpSet) Has(op rules.Operation) bool {
	slot := opSlot(op)
	return slot >= 0 && s&(1<<slot) != 0
}

// IndexKeys place a rule in the snapshot's index, so that finding the rules
// that can apply to a request costs a few map lookups whatever their number.
type IndexKeys struct {
	// Namespace is the one namespace whose objects the rule applies to
	// ("" for cluster-scoped objects), unless AnyNamespace.
	Namespace    string
	AnyNamespace bool
	// Filtered: the index alone does not decide; Rule.InScope is asked
	// for every request the keys let through (a namespace regex, say).
	Filtered bool
	// Operations the rule reacts to.
	Operations OpSet
	// Kinds the rule is pinned to (the object's kind); nil: any kind; an
	// empty non-nil list: none (the rule can never apply).
	Kinds []string
	// Payloads: the rule evaluates JSON payloads (Request.Payload) and
	// never a Kubernetes object; the other keys are not read.
	Payloads bool
	// Fields are the first tests the rule's Match makes of the object, in
	// order (see Field): the kernel decides them without calling Match
	// where it can. Nil: none.
	Fields []Field
}

// Field is a test of the object that a rule's Match makes before anything
// that can fail (an error, a lookup, a budget): the value at Path (members
// of objects from the root) must be one of Values, strings. A kind declares
// it only when Match, on an object where the test fails, returns false with
// no error whatever follows; and where it passes, goes on to the next as if
// it had not been made.
//
// The kernel decides a Field on the object as the rule finds it, without a
// trace (with one, Match is asked, for its account of each test): a member
// of Path from Strict on missing, or a string not among Values, fails it
// (the rule is NotMatched, as Match would have said); a string among
// Values passes it, and the next Field is decided. Anything else leaves
// the rule to Match: a member before Strict missing (an expression that
// fails on it), a path through what is not an object, null, a number, a
// list, an object, a string over maxFieldText bytes.
type Field struct {
	Path   []string
	Values []string
	Strict int
}

// maxFieldText is the longest string the kernel tests for a Field: longer
// ones are left to Match (which may bound the text it tests).
const maxFieldText = 64 << 10

// fieldVerdict is the kernel's decision of one Field.
type fieldVerdict uint8

const (
	fieldUndecided fieldVerdict = iota
	fieldPasses
	fieldFails
)

// Where a Field's path ends (Field.walk): found, or not an object on
// the way; any other value is the index of the first member missing.
const (
	pathFound    = -1
	pathNotInObj = -2
)

// walk looks f's path up in root: the value and pathFound, or where it
// stops.
func (f *Field) walk(root any) (any, int) {
	v := root
	for i, name := range f.Path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, pathNotInObj
		}
		if v, ok = m[name]; !ok {
			return nil, i
		}
	}
	return v, pathFound
}

// decide decides f on what walk found.
func (f *Field) decide(v any, at int) fieldVerdict {
	switch {
	case at == pathNotInObj:
		return fieldUndecided
	case at >= 0 && at < f.Strict:
		return fieldUndecided
	case at >= 0:
		return fieldFails
	}
	s, ok := v.(string)
	if !ok || len(s) > maxFieldText {
		return fieldUndecided
	}
	for _, want := range f.Values {
		if s == want {
			return fieldPasses
		}
	}
	return fieldFails
}

// FieldsRefuse reports whether the kernel decides, from fields alone, that
// a rule declaring them does not match root: a Field fails before any is
// left undecided.
func FieldsRefuse(fields []Field, root any) bool {
	for i := range fields {
		switch fields[i].decide(fields[i].walk(root)) {
		case fieldFails:
			return true
		case fieldUndecided:
			return false
		}
	}
	return false
}

// RuleInfo is what the kernel knows of a compiled rule; it is fixed when the
// rule compiles.
type RuleInfo struct {
	// Kind is the rule's kind as its manifests spell it ("ModRule").
	Kind string
	// Group is the API group of the rule's kind (two kinds of different
	// groups may share a name), set by the source that compiled it.
	Group string
	// Key is namespace/name ("name" alone for a rule with no namespace).
	Key             string
	Namespace, Name string
	// Tier orders rules (lowest first): KubeMod's executionTier.
	Tier  int
	Phase Phase
	// FailurePolicy: what the rule's failure does.
	FailurePolicy FailurePolicy
	Index         IndexKeys
	// Err is set when the rule failed to compile (a *rules.CompileError):
	// such a rule is kept in the snapshot and reported, never evaluated.
	Err error
	// Inputs are the members its kind prepares that the rule reads (an
	// Input: built once per evaluation when a candidate declares them).
	Inputs []Input
	// KeepLastApplied is true when the rule's operations are not mirrored
	// into the kubectl last-applied-configuration annotation (the kernel
	// mirrors them by default, as kubectl would see them applied).
	KeepLastApplied bool
	// Converge makes a Mutate rule one of the Converge rules of its tier,
	// each matched when its turn comes (against the object as the rules
	// before it left it, not as the tier found it) and applied again, in
	// order, until a pass changes nothing (Gatekeeper's mutation system);
	// when they still change it after one more pass than they are, the
	// last of them fails with ErrNotConverging.
	Converge bool
	// Existing names the inner rules (Generated.Name; "" for a rule
	// without inner rules) that act on the objects existing when the rule
	// is added or changed, not only on those admitted (Kyverno's
	// generateExisting and mutateExistingOnPolicyUpdate): the operator
	// evaluates the rule over them, each as if created, and carries out
	// what those inner rules generate or change.
	Existing []string
	// ExistingResources are the resources whose objects the operator
	// evaluates for Existing (nil: those of the kinds the index names,
	// every kind's when it names none).
	ExistingResources []GroupVersionResource
	// Downstream names the inner rules whose synchronized objects go when
	// the rule is deleted (Kyverno's synchronize without
	// orphanDownstreamOnPolicyDelete): the operator deletes them.
	Downstream []string
	// Generates names every inner rule that generates objects, whatever
	// its settings: an inner rule once in Downstream that is no longer
	// among them was removed from the rule, and its synchronized objects
	// go as well (as Kyverno deletes a removed rule's).
	Generates []string
}

// Rule is one compiled rule of some kind: a kind adapter (package
// internal/kinds/...) compiles a manifest into it. It is immutable and safe
// for concurrent use.
//
// The kernel evaluates a candidate rule through a Handle: a Mutate rule is
// matched (Match) against the object as its tier found it, and the matching
// ones of the tier are then applied (Apply) in order; a Validate rule is
// matched and applied on the final object. Apply may patch (Mutate), reject
// or warn (Validate), and fail.
type Rule interface {
	Info() *RuleInfo
	// InScope decides, for a rule whose Index is Filtered, whether it
	// applies to objects of namespace ns ("" for cluster-scoped objects).
	InScope(ns string) bool
	// Match reports whether the rule applies to the object. A non-nil
	// error means the rule could not be decided (the end of the context,
	// or a bound hit): wrap it with InField to name the field at fault.
	Match(h *Handle) (bool, error)
	// Apply acts on a matching rule through h. A non-nil error is the end
	// of the context, or, for a Validate rule, a bound that leaves it
	// undecided; a Mutate rule reports its failures with Handle.Fail.
	Apply(h *Handle) error
}

// InField wraps err, the failure of a rule, with the field at fault
// (spec.match[1].select); the kernel reports it in RuleError.Field.
func InField(field string, err error) error {
	if err == nil {
		return nil
	}
	return &fieldErr{field, err}
}

type fieldErr struct {
	field string
	err   error
}

func (e *fieldErr) Error() string { return e.field + ": " + e.err.Error() }
func (e *fieldErr) Unwrap() error { return e.err }

// splitField undoes InField.
func splitField(err error) (string, error) {
	var fe *fieldErr
	if errors.As(err, &fe) {
		return fe.field, fe.err
	}
	return "", err
}
