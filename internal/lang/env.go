package lang

import "fmt"

// FixedLimit checks one limit an Env asks for (asked, 0 for the default)
// against a language whose bound is fixed (bound, its package's constant):
// it returns a Diagnostic (Pos -1) when asked is neither 0 nor bound. A
// larger limit cannot be honoured; a smaller one is refused too until the
// language's leaf package takes its bounds as parameters. lang names the
// language, limit the field ("MaxValues").
func FixedLimit(lang, limit string, asked, bound int64) (Diagnostic, bool) {
	switch {
	case asked == 0 || asked == bound:
		return Diagnostic{}, false
	case asked > bound:
		return Diagnostic{Pos: -1, Msg: fmt.Sprintf("limit %s %d cannot be honoured: %s's bound is %d", limit, asked, lang, bound)}, true
	default:
		return Diagnostic{Pos: -1, Msg: fmt.Sprintf("limit %s %d is not supported: %s's bound is fixed at %d", limit, asked, lang, bound)}, true
	}
}

// Undeclared returns a Diagnostic (Pos -1) for each variable env declares
// that is not among known: the variables a language cannot bind.
func Undeclared(lang string, env *Env, known ...string) []Diagnostic {
	var ds []Diagnostic
	for _, v := range env.Vars {
		ok := false
		for _, k := range known {
			if v.Name == k {
				ok = true
				break
			}
		}
		if !ok {
			ds = append(ds, Diagnostic{Pos: -1, Msg: fmt.Sprintf("environment %q declares variable %q, which %s cannot bind", env.Name, v.Name, lang)})
		}
	}
	return ds
}
