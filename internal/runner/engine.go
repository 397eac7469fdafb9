package runner

import (
	"context"

	"github.com/modwright/modwright/internal/engine"
)

// Engine runs requests through engine.Evaluate, as `modwright apply` does.
type Engine struct {
	eng  *engine.Engine
	snap *engine.Snapshot
}

var _ Driver = (*Engine)(nil)

// NewEngine returns the Engine driver for snap; objects reads the context
// objects (syntheticRefs), nil for none.
func NewEngine(snap *engine.Snapshot, objects engine.ObjectReader) *Engine {
	return NewEngineAuthz(snap, objects, nil)
}

// NewEngineAuthz is NewEngine with an authorizer for the rules'
// authorization checks (a test suite's decisions).
func NewEngineAuthz(snap *engine.Snapshot, objects engine.ObjectReader, authz engine.Authorizer) *Engine {
	opts := Options(objects)
	opts.Authorizer, opts.NoTrace = authz, true
	return NewEngineOptions(snap, opts)
}

// NewEngineOptions is the Engine driver for snap with the engine's
// options, as given (opts.NoTrace false: decisions carry the trace
// explain prints).
func NewEngineOptions(snap *engine.Snapshot, opts engine.Options) *Engine {
	return &Engine{eng: engine.New(opts), snap: snap}
}

// Run evaluates one request.
func (e *Engine) Run(ctx context.Context, req Request) (*Result, error) {
	dec, err := e.eng.Evaluate(ctx, e.snap, Attributes(req))
	if engine.Refusal(err) {
		// The webhook denies the object (code 500) with this message.
		return &Result{Denial: "modwright: " + err.Error(), Refusal: err, Decision: &engine.Decision{}}, nil
	}
	if err != nil {
		return nil, err
	}
	r := &Result{Allowed: dec.Allowed(), Decision: dec}
	for _, re := range dec.Errors {
		r.Warnings = append(r.Warnings, re.Error())
	}
	for _, w := range dec.Warnings {
		r.Warnings = append(r.Warnings, WarningText(w))
	}
	if !r.Allowed {
		r.Denial = dec.DenialMessage()
		return r, nil
	}
	if r.Object, err = dec.DecodeObject(); err != nil {
		return nil, err
	}
	r.Patch = dec.Patch
	return r, nil
}
