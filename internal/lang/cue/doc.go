// Package cue is the CUE language over
// cuelang.org/go, as kinitiras runs it: a program declares its parameters
// (object: _ @tag(object)), each parameter's JSON is unified into the field
// of its name, and the program's output field is read: `patches` (a list of
// JSON-patch operations) or `validate` ({valid, reason}; ValidateResult
// reads it as kinitiras does).
//
// It owns: parsing and building a program once at Compile (syntax and
// build errors are Diagnostics at their byte offsets); evaluating it per
// request in a CUE context borrowed from the program's pool (a CUE context
// is not safe for concurrent use; each pooled context holds the built
// program and is dropped after maxUses evaluations, which bounds what it
// interns); the request's deadline (CUE cannot be interrupted in a
// process: in this process an evaluation still running when the context
// ends is abandoned, its context not reused, and Run returns at once);
// concrete JSON output.
//
// Workers (workers.go, worker.go) make evaluation stoppable: with
// Language.Workers a program is checked and evaluated in worker processes
// (ServeWorker, a frame protocol on stdin and stdout; a program's
// processing.http task is answered by the parent), each killed at its
// evaluation's deadline, after WorkerOptions.Timeout, or when its heap
// passes WorkerOptions.MemoryLimit (ErrTimeout, ErrMemory, in
// lang.ErrLimit's chain). serve uses them; the one-shot commands do not.
//
// Kinitiras' 16 CUE cases run in conformance_test.go, in this process and
// through Workers: 14 pass, 2 are documented deviations (checks of
// kinitiras' Go API).
//
// Remaining work (issue 17): the parameters are encoded as JSON and
// compiled per request, as kinitiras does; injecting only what a program
// references is the planned speed-up.
//
// It must not know rule kinds, Kubernetes admission, or where parameters
// come from.
package cue
