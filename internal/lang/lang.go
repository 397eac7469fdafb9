package lang

import (
	"context"
	"errors"
	"fmt"
)

// Var declares one input of an environment: a name a program may read.
type Var struct {
	Name string
	Doc  string
}

// Limits bound one evaluation of a program. Zero fields take the
// language's defaults (its package's documented bounds); a language refuses
// (with a Diagnostic at Compile) a limit it cannot honour.
type Limits struct {
	// MaxValues bounds the values a query may yield.
	MaxValues int
	// MaxWork bounds the steps of one evaluation (nodes visited, template
	// work units): the language's cost measure.
	MaxWork int64
	// MaxOutput bounds the bytes of text a program may produce.
	MaxOutput int
}

// Env is the declared environment programs compile against: the variables
// they may read and the limits of an evaluation. It is built once per rule
// kind (or per field of a kind) and shared; it must not change after use.
type Env struct {
	// Name identifies the environment in diagnostics ("kubemod.select").
	Name   string
	Vars   []Var
	Limits Limits
}

// Has reports whether the environment declares name.
func (e *Env) Has(name string) bool {
	for _, v := range e.Vars {
		if v.Name == name {
			return true
		}
	}
	return false
}

// Diagnostic is one problem in a program's source, found at Compile: Pos is
// the 0-based byte offset in the source, or -1 when unknown. The rule kind
// that compiled the source adds the rule and the field (rules.FieldError).
type Diagnostic struct {
	Pos int
	Msg string
}

func (d Diagnostic) Error() string {
	if d.Pos < 0 {
		return d.Msg
	}
	return fmt.Sprintf("at %d: %s", d.Pos, d.Msg)
}

// Activation is the input of one evaluation: the declared variables' values.
// The fields are the inputs every kind shares; a language reads those its
// Env declares (by the names its package documents) and Vars for the rest.
// An Activation may be reused between evaluations by its owner; programs
// never keep it.
type Activation struct {
	// Object is the object under evaluation, as earlier rules left it.
	Object any
	// OldObject is the existing object (UPDATE, DELETE), or nil.
	OldObject any
	// Namespace is the object's namespace ("" when cluster-scoped).
	Namespace string
	// Item is the element a selection picked (a patch item's select), and
	// Keys the keys its capturing steps went through.
	Item any
	Keys []any
	// Vars holds the other declared variables by name.
	Vars map[string]any
}

// Program is a compiled program. It is immutable and safe for concurrent
// use. Eval honours ctx and the Env's limits.
type Program interface {
	// Source is the text the program was compiled from.
	Source() string
	// Eval evaluates the program. The result's type is the language's
	// (a query yields []any, a template its text).
	Eval(ctx context.Context, in *Activation) (any, error)
}

// Query is a program that selects values in a JSON tree (JSONPath): its
// results are many values, each reachable by a path. Kinds that select and
// patch (ModRule) use it.
type Query interface {
	Program
	// Canonical is the program's normalized text (two spellings of one
	// query have the same canonical form).
	Canonical() string
	// Values appends the values the program yields from root to dst and
	// returns them; single is true when it yields at most one value by
	// construction. Undefined values are dropped.
	Values(ctx context.Context, root any, dst []any) (vals []any, single bool, err error)
	// Nodes returns the selected values with the keys the capturing steps
	// went through. Only a path (IsPath) has nodes.
	Nodes(ctx context.Context, root any) ([]Node, error)
	// NodesTo is Nodes appending the nodes to dst and their keys to keys
	// (each node's Keys a slice of it), for a caller that reuses both:
	// the nodes are valid until it does.
	NodesTo(ctx context.Context, root any, dst []Node, keys []any) ([]Node, []any, error)
	// IsPath reports whether the program is a path into the tree, not a
	// computed expression.
	IsPath() bool
	// Captures is the number of capturing steps of a path.
	Captures() int
}

// Node is one value a Query selected and the keys its capturing steps went
// through (ints for array indexes, strings for object keys, and the
// language's own type for a recursive descent).
type Node struct {
	Value any
	Keys  []any
}

// Text is a program that renders text (a template).
type Text interface {
	Program
	// Render renders the program's text from in.
	Render(ctx context.Context, in *Activation) (string, error)
	// Static reports whether the text is a constant (it reads no
	// variable); Source is then the rendered text.
	Static() bool
}

// Path is the key of a Node for a recursive descent step: the relative
// path (ints and strings) the descent went down. A language with such steps
// gives its keys as Path so that callers need not know its types.
type Path []any

// ErrNoReader is in the chain of the error of an evaluation reading data
// that no reader gives (offline: a ConfigMap, an API response, the
// authorizer): how the cluster would answer is unknown (engine.Refusal).
var ErrNoReader = errors.New("no reader for the data the rule reads")

// NoReader returns an error whose text is msg and in whose chain
// ErrNoReader is.
func NoReader(msg string) error { return noReaderError(msg) }

type noReaderError string

func (e noReaderError) Error() string        { return string(e) }
func (e noReaderError) Is(target error) bool { return target == ErrNoReader }

// ErrLimit is in the chain of every error of an evaluation that hit one of
// its language's bounds (values selected, work, output): check it with
// errors.Is. The language's own sentinel stays in the chain too.
var ErrLimit = errors.New("evaluation limit exceeded")

// Limit marks err, a bound the evaluation hit, with ErrLimit; nil stays
// nil. Its text is err's.
func Limit(err error) error {
	if err == nil {
		return nil
	}
	return &limitError{err}
}

type limitError struct{ err error }

func (e *limitError) Error() string   { return e.err.Error() }
func (e *limitError) Unwrap() []error { return []error{ErrLimit, e.err} }
