package template

import (
	"errors"
	"fmt"
)

// ErrLimit marks a template that exceeded one of the bounds below, at compile
// time or while it ran. Execution errors that carry it also carry ErrTemplate.
var ErrLimit = errors.New("template limit exceeded")

// The bounds every template runs under. Go cannot stop a running goroutine,
// so they are structural: every function that builds a value checks the size
// it is about to build before building it, and every call, loop iteration
// and template invocation is charged to a work budget. No published ModRule
// comes near any of them (their templates are single field references and a
// regexReplaceAll).
const (
	// MaxOutput is the most text one execution may render, and the longest
	// string any function may build (repeat, printf, indent, replace, ...).
	// It is above etcd's default request limit (1.5 MiB), so no value a
	// stored object can hold is cut.
	MaxOutput = 2 << 20

	// MaxList is the most elements a function may generate (until, seq,
	// untilStep, splitList, split, regexFindAll, regexSplit, ...).
	MaxList = 100_000

	// MaxSteps is the most range iterations plus template invocations
	// ({{ template }}, recursion included) of one execution.
	MaxSteps = 10_000

	// MaxWork is the work budget of one execution, in units of roughly a
	// nanosecond: each function call, and each node of a range body or
	// defined template executed, costs nodeCost; strings a function receives
	// or returns cost their length, lists and maps elemCost per element;
	// deep operations (toJson, deepCopy, printing a map) cost the size of
	// the tree; superlinear ones (uniq, sortAlpha) what they compare.
	MaxWork = 1 << 25

	// MaxRangeDepth is the deepest nesting of range actions a template may
	// have; deeper templates do not compile.
	MaxRangeDepth = 4

	// MaxFormatWidth bounds the width and precision in printf verbs
	// ("%010d" is fine, "%0100000000d" is not).
	MaxFormatWidth = 10_000

	// MaxValueDepth is the deepest nesting of lists and maps a rendered
	// value may parse into (the API server decodes JSON up to 10,000 levels;
	// a patch value sits below the object's own path).
	MaxValueDepth = 1_000

	// MaxValueItems bounds the list items and map entries a rendered value
	// may parse into, counted before parsing as its commas, brackets and
	// lines (YAML parsing takes about a microsecond per item).
	MaxValueItems = 100_000
)

// Costs in work units, calibrated so that a unit takes about a nanosecond:
// a byte copied or scanned costs 1.
const (
	nodeCost = 256    // one template node executed, or one function call (reflection)
	elemCost = 32     // one list or map element handled through reflection
	strCost  = 8      // one byte of a string argument (scanned, mapped, escaped)
	randCost = 1_000  // one random character (crypto/rand per character)
	zoneCost = 50_000 // loading a time zone (dateInZone reads the zoneinfo database)
)

// limitError says which limit was exceeded and what exceeded it.
type limitError struct {
	what  string // what exceeded the limit ("rendered output", "until")
	limit string // the limit's name
	value int64  // the limit's value
}

func (e *limitError) Error() string {
	return fmt.Sprintf("%s: %s exceeds the limit %s = %d%s", ErrLimit, e.what, e.limit, e.value, units[e.limit])
}

// units are the units of the limits, for messages.
var units = map[string]string{
	"MaxOutput": " bytes", "MaxList": " elements", "MaxSteps": "",
	"MaxWork": " work units", "MaxRangeDepth": " levels", "MaxFormatWidth": " characters", "MaxValueDepth": " levels",
	"MaxValueItems": "",
}

func (e *limitError) Is(target error) bool { return target == ErrLimit }

func exceeded(what, limit string, value int64) error {
	return &limitError{what: what, limit: limit, value: value}
}
