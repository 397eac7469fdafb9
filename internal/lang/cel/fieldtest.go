package cel

import (
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
	// An orValue's default: a constant that is none of the values (a
	// missing member then makes the condition false).
	optional := false
	if subject.Kind() == celast.CallKind && subject.AsCall().FunctionName() == "orValue" && subject.AsCall().IsMemberFunction() {
		oc := subject.AsCall()
		if len(oc.Args()) != 1 || oc.Args()[0].Kind() != celast.LiteralKind {
			return nil
		}
		if d, ok := oc.Args()[0].AsLiteral().(types.String); ok {
			for _, v := range values {
				if string(d) == v {
					return nil
				}
			}
		}
		subject, optional = oc.Target(), true
	}
	// The steps, from the last to the object.
	var rev []string
	firstOpt := -1 // in rev: the optional step nearest the object
	for {
		switch subject.Kind() {
		case celast.IdentKind:
			if subject.AsIdent() != VarObject || len(rev) == 0 || optional != (firstOpt >= 0) {
				return nil
			}
			ft := &FieldTest{Path: make([]string, len(rev)), Values: values, Strict: len(rev)}
			for i, name := range rev {
				ft.Path[len(rev)-1-i] = name
			}
			if firstOpt >= 0 {
				ft.Strict = len(rev) - 1 - firstOpt
			}
			return ft
		case celast.SelectKind:
			sel := subject.AsSelect()
			if sel.IsTestOnly() {
				return nil
			}
			rev = append(rev, sel.FieldName())
			subject = sel.Operand()
		case celast.CallKind:
			c := subject.AsCall()
			name := c.FunctionName()
			if c.IsMemberFunction() || len(c.Args()) != 2 || (name != operators.Index && name != operators.OptIndex && name != operators.OptSelect) {
				return nil
			}
			s, ok := stringLiteral(c.Args()[1])
			if !ok {
				return nil
			}
			if name != operators.Index {
				firstOpt = len(rev)
			}
			rev = append(rev, s)
			subject = c.Args()[0]
		default:
			return nil
		}
	}
}

func stringLiteral(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}
