package cel

import (
	"slices"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
)

// FieldTest is a condition that tests one string of the object and
// nothing else: the value at Path (members from the object's root) is
// one of Values. Program.FieldTest says which conditions are, and how they
// decide:
//
//   - a member of Path from Strict on missing: the condition is false (an
//     optional step, `.?labels`, `[?'app']`, whose orValue's default is
//     none of Values; CEL's optional chaining makes every step after
//     such a one optional too);
//   - a member before Strict missing: an error (a plain step, `.metadata`);
//   - a string among Values: true; another string: false;
//   - anything else (a path through what is not a map, null, another
//     type): what CEL says, which FieldTest does not.
type FieldTest struct {
	Path   []string
	Values []string
	Strict int
}

// fieldTest recognizes a FieldTest in a checked expression:
//
//	PATH == 'v'   'v' == PATH   PATH in ['v1', 'v2', ...]
//
// where PATH is object followed by member steps (.f, ['f'], .?f, [?'f']),
// and, when a step is optional, ends in .orValue(d) with d a constant that
// is not one of the values.
func fieldTest(e celast.Expr) *FieldTest {
	if e.Kind() != celast.CallKind {
		return nil
	}
	call := e.AsCall()
	args := call.Args()
	if call.IsMemberFunction() || len(args) != 2 {
		return nil
	}
	var subject celast.Expr
	var values []string
	switch call.FunctionName() {
	case operators.Equals:
		for i := range 2 {
			if s, ok := stringLiteral(args[1-i]); ok {
				subject, values = args[i], []string{s}
				break
			}
		}
	case operators.In:
		if args[1].Kind() != celast.ListKind || len(args[1].AsList().OptionalIndices()) > 0 {
			return nil
		}
		for _, el := range args[1].AsList().Elements() {
			s, ok := stringLiteral(el)
			if !ok {
				return nil
			}
			values = append(values, s)
		}
		subject = args[0]
	}
	if subject == nil || len(values) == 0 {
		return nil
	}
	// An orValue's default is a constant that is none of the values (a
	// missing member then makes the condition false).
	m, ok := memberOf(subject)
	if !ok {
		return nil
	}
	if d, ok := m.def.(string); ok && slices.Contains(values, d) {
		return nil
	}
	return &FieldTest{Path: m.path, Values: values, Strict: m.strict}
}

func stringLiteral(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}
