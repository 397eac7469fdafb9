package translate

import (
	"cmp"
	"fmt"
	"slices"
)

// Placement chooses where a rule that translates runs.
type Placement int

const (
	// PlaceFastest keeps in the webhook every rule that runs faster there:
	// one whose requests the webhook is called for anyway, for a rule left
	// to it. The API server's admission policy costs a share of a create
	// (its conversions, the patch, the object decoded and defaulted again)
	// on top of the webhook's call, which the rule's evaluation there costs
	// a few microseconds of; a rule runs in the API server where moving it
	// spares requests the webhook call (BENCHMARKS.md, issue 30).
	PlaceFastest Placement = iota
	// PlaceNative runs every rule that translates in the API server, even
	// where the webhook is faster (a cluster that wants no webhook on the
	// way, say).
	PlaceNative
)

// ParsePlacement reads "fastest" or "native".
func ParsePlacement(s string) (Placement, error) {
	switch s {
	case "fastest":
		return PlaceFastest, nil
	case "native":
		return PlaceNative, nil
	}
	return 0, fmt.Errorf("placement must be fastest or native, not %q", s)
}

// Scope is where a rule may apply, as the webhook's narrowing takes it: the
// namespace of the objects it concerns ("" for cluster-scoped ones, a
// Namespace counting as one), or anywhere (a cluster-wide rule, one whose
// namespaces a regex or selector decides).
type Scope struct {
	Namespace string
	Anywhere  bool
}

// covers reports whether every request a rule of scope r may concern is one
// the webhook is called for because of a rule of scope s.
func (s Scope) covers(r Scope) bool {
	return s.Anywhere || (!r.Anywhere && s.Namespace == r.Namespace)
}

// ScopedRule is a rule the webhook serves without compile, with its scope.
type ScopedRule struct {
	Ref   RuleRef
	Scope Scope
}

// Place applies placement p to res: with PlaceFastest, every translation
// one of whose rules' requests the webhook is called for anyway, all of
// them, because a rule left to it (a skipped one, or one of rules that res
// does not hold: a kind compile does not translate) covers its scope, is
// kept in the webhook (a Skip with Kept set, naming that rule); rules kept
// may in turn keep others. rules are every rule the webhook would serve,
// with their scopes, by their kinds as compiled (a policy's current kind)
// and keys; a rule of res that rules lack is taken as applying anywhere.
func Place(res Result, p Placement, rules []ScopedRule) Result {
	if p == PlaceNative {
		return res
	}
	res.Skipped = slices.Clip(res.Skipped) // res may be kept by the caller: append to a copy
	scopes := make(map[RuleRef]Scope, len(rules))
	for _, r := range rules {
		scopes[r.Ref] = r.Scope
	}
	scopeOf := func(r Rule) Scope {
		s, ok := scopes[ref(r)]
		if !ok {
			return Scope{Anywhere: true}
		}
		return s
	}
	translated := map[RuleRef]bool{}
	for _, t := range res.Translated {
		for _, r := range t.Rules {
			translated[ref(r)] = true
		}
	}
	// The rules left to the webhook, by the scope they cover, the first in
	// order named (each says only which runs there: its own status or
	// line says why): one of the namespace, else one that applies
	// anywhere; one that does not translate before one kept (tier 1).
	type tier struct {
		anywhere    string
		inNamespace map[string]string
	}
	tiers := [2]tier{{inNamespace: map[string]string{}}, {inNamespace: map[string]string{}}}
	leave := func(t int, name string, s Scope) {
		switch {
		case s.Anywhere:
			if tiers[t].anywhere == "" {
				tiers[t].anywhere = name
			}
		case tiers[t].inNamespace[s.Namespace] == "":
			tiers[t].inNamespace[s.Namespace] = name
		}
	}
	coverer := func(s Scope) string {
		for _, t := range tiers {
			if name := t.inNamespace[s.Namespace]; name != "" && !s.Anywhere {
				return name
			}
			if t.anywhere != "" {
				return t.anywhere
			}
		}
		return ""
	}
	left := slices.Clone(rules)
	slices.SortStableFunc(left, func(a, b ScopedRule) int {
		return cmp.Or(cmp.Compare(a.Ref.Kind, b.Ref.Kind), cmp.Compare(a.Ref.Key, b.Ref.Key))
	})
	for _, r := range left {
		if !translated[r.Ref] {
			leave(0, r.Ref.Kind+" "+r.Ref.Key+" runs there", r.Scope)
		}
	}
	for changed := true; changed; {
		changed = false
		native := res.Translated[:0:0]
		for _, t := range res.Translated {
			why := ""
			for _, r := range t.Rules {
				if why = coverer(scopeOf(r)); why != "" {
					break
				}
			}
			if why == "" {
				native = append(native, t)
				continue
			}
			reason := "faster there: the webhook is called for every request it may concern anyway (" + why +
				"), and its admission policy would cost the API server more than the rule costs the webhook; --placement native moves it"
			for _, r := range t.Rules {
				res.Skipped = append(res.Skipped, Skip{Rule: r, Reason: reason, Kept: true})
				if s, ok := scopes[ref(r)]; ok { // a rule the webhook serves (not a template)
					leave(1, r.Kind+" "+r.Key()+" runs there, kept as well", s)
				}
			}
			changed = true
		}
		res.Translated = native
	}
	return res
}

func ref(r Rule) RuleRef { return RuleRef{Kind: r.Kind, Key: r.Key()} }
