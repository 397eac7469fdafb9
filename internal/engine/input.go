package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/modwright/modwright/internal/patch"
)

// An Input is context a rule kind prepares for its rules under a
// top-level member of the object under evaluation (the related objects a
// kind's rules read beside the object). A rule declares its inputs in
// RuleInfo.Inputs; the kernel, for the candidates of one evaluation:
//
//   - builds each member once (Build, on the first candidate's input of
//     that member, which sees the candidates' distinct inputs of that
//     member through InputRequest.Each)
//     and puts it in the document before any rule runs; a member built as
//     nil is absent, the client's own member of that name removed;
//   - refuses every operation under the member (ErrInput) and restores the
//     client's member in the result, so rules read the member, never
//     change it, and the client can never forge it;
//   - shows each rule its view (ViewKey, View): a namespaced rule may see
//     part of what was built, each view computed once per evaluation.
//
// Inputs are immutable and shared by the evaluations of a snapshot; rules
// that need the same should share one value (the kernel compares them
// with ==), so that a snapshot of many rules has few distinct inputs.
type Input interface {
	// Member is the top-level member the input is put under.
	Member() string
	// Build reads the member's value for one request (nil: the member is
	// absent). Errors are recorded through InputRequest.Fail and leave the
	// rest of the value.
	Build(ir *InputRequest) any
	// ViewKey names the view rule r (one declaring the input) sees; ok
	// false when it does not care (it reads no part a view hides). "" is
	// the value as built.
	ViewKey(r Rule) (key string, ok bool)
	// View is the view named key ("" never: that is the value as built)
	// of built.
	View(built any, key string) any
}

// ErrInput is wrapped by the error of an operation whose path is under an
// input's member (an *InputError): inputs are context rules read, never
// change.
var ErrInput = errors.New("rules cannot change an input")

// InputError is an operation writing under an input's member.
type InputError struct {
	Member string
	Path   patch.Pointer
}

func (e *InputError) Error() string {
	return fmt.Sprintf("rules cannot change %s: the path %s is under /%s", e.Member, e.Path, e.Member)
}

// Is makes errors.Is(err, ErrInput) true.
func (e *InputError) Is(target error) bool { return target == ErrInput }

// InputRequest is what an Input's Build reads: the request, the object as
// the client sent it, the readers, and the inputs of the same member that
// every candidate declared.
type InputRequest struct {
	ev   *evaluation
	slot *inputSlot
}

// Context is the evaluation's context.
func (ir *InputRequest) Context() context.Context { return ir.ev.ctx }

// Request is the admission request.
func (ir *InputRequest) Request() *Request { return &ir.ev.req }

// Kind is the object's kind.
func (ir *InputRequest) Kind() string { return ir.ev.kind }

// Object is the object as the client sent it (never modify it).
func (ir *InputRequest) Object() map[string]any { return ir.ev.original }

// Objects reads related objects; nil without an ObjectReader.
func (ir *InputRequest) Objects() ObjectReader { return ir.ev.e.objects }

// Graph reads the relationship graph; nil without a GraphReader.
func (ir *InputRequest) Graph() GraphReader { return ir.ev.e.graph }

// Each calls f with each distinct input (==) of the member being built
// that a candidate declares.
func (ir *InputRequest) Each(f func(Input)) {
	for _, in := range ir.ev.seen {
		if in.Member() == ir.slot.member {
			f(in)
		}
	}
}

// Fail records a failure to read part of the input: a RuleError of no rule
// at field (the member's path: "refs.node").
func (ir *InputRequest) Fail(field string, err error) {
	ir.ev.d.Errors = append(ir.ev.d.Errors, RuleError{Field: field, Err: err})
}

// inputSlot is one member of the evaluation's inputs.
type inputSlot struct {
	member  string
	path    patch.Pointer // pathBuf's: no allocation per evaluation
	built   any
	pathBuf [1]string
	// key is the view in the document; views caches each key's view.
	key   string
	views map[string]any
}

// buildInputs builds the members the candidates declare.
func (ev *evaluation) buildInputs() {
	ev.seen = ev.seenBuf[:0]
	for _, r := range ev.candidates {
		for _, in := range r.Info().Inputs {
			if n := len(ev.seen); n > 0 && ev.seen[n-1] == in || slices.Contains(ev.seen, in) {
				continue
			}
			ev.seen = append(ev.seen, in)
		}
	}
	for _, in := range ev.seen {
		if ev.inputSlot(in.Member()) != nil {
			continue
		}
		ev.inputs = append(ev.inputs, inputSlot{member: in.Member()})
		slot := &ev.inputs[len(ev.inputs)-1]
		slot.pathBuf[0] = slot.member
		slot.path = slot.pathBuf[:]
		ev.ir = InputRequest{ev: ev, slot: slot} // in the evaluation: no allocation
		slot.built = in.Build(&ev.ir)
	}
}

// inputSlot is the slot of member, nil when no candidate declares it.
func (ev *evaluation) inputSlot(member string) *inputSlot {
	for i := range ev.inputs {
		if ev.inputs[i].member == member {
			return &ev.inputs[i]
		}
	}
	return nil
}

// putInputs puts every built member in the document (as built), and
// removes the client's where the member is built as nil.
func (ev *evaluation) putInputs(root map[string]any) {
	for i := range ev.inputs {
		s := &ev.inputs[i]
		s.key = ""
		if s.built != nil {
			ev.must(ev.doc.Put(s.path, s.built))
		} else if _, ok := root[s.member]; ok {
			ev.must(ev.doc.Apply(patch.Operation{Op: patch.Remove, Path: s.path}))
		}
	}
}

// viewInputs puts in the document the views of rule r's inputs.
func (ev *evaluation) viewInputs(r Rule) {
	for _, in := range r.Info().Inputs {
		key, ok := in.ViewKey(r)
		if !ok {
			continue
		}
		s := ev.inputSlot(in.Member())
		if s == nil || s.built == nil || s.key == key {
			continue
		}
		view := s.built
		if key != "" {
			if view = s.views[key]; view == nil {
				view = in.View(s.built, key)
				if s.views == nil {
					s.views = map[string]any{}
				}
				s.views[key] = view
			}
		}
		ev.must(ev.doc.Put(s.path, view))
		s.key = key
	}
}

// isInput reports whether a top-level member is an input's.
func (ev *evaluation) isInput(member string) bool { return ev.inputSlot(member) != nil }
