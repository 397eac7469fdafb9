package translate

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// quote is s as a CEL string literal.
func quote(s string) string { return strconv.Quote(s) }

// quoteList is ss as a CEL list of strings.
func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// and joins conditions with &&, "true" when there are none.
func and(cs ...string) string {
	cs = slices.DeleteFunc(slices.Clone(cs), func(c string) bool { return c == "" || c == "true" })
	switch len(cs) {
	case 0:
		return "true"
	case 1:
		return cs[0]
	}
	return "(" + strings.Join(cs, ") && (") + ")"
}

// or joins conditions with ||.
func or(cs ...string) string {
	if len(cs) == 1 {
		return cs[0]
	}
	return "(" + strings.Join(cs, ") || (") + ")"
}

// labelsOf is a CEL expression for the labels of the object expression o
// (a map, empty when there are none).
func labelsOf(o string) string {
	return fmt.Sprintf("(%s != null && has(%s.metadata) && has(%s.metadata.labels) ? %s.metadata.labels : {})", o, o, o, o)
}

// selector is a CEL condition for a label selector over the labels
// expression l, as labels.Selector.Matches decides it.
func selector(sel *metav1.LabelSelector, l string) (string, error) {
	if sel == nil {
		return "true", nil
	}
	var cs []string
	keys := make([]string, 0, len(sel.MatchLabels))
	for k := range sel.MatchLabels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		cs = append(cs, fmt.Sprintf("%s in %s && %s[%s] == %s", quote(k), l, l, quote(k), quote(sel.MatchLabels[k])))
	}
	for _, e := range sel.MatchExpressions {
		k := quote(e.Key)
		switch e.Operator {
		case metav1.LabelSelectorOpIn:
			cs = append(cs, fmt.Sprintf("%s in %s && %s[%s] in %s", k, l, l, k, quoteList(e.Values)))
		case metav1.LabelSelectorOpNotIn:
			cs = append(cs, fmt.Sprintf("!(%s in %s) || !(%s[%s] in %s)", k, l, l, k, quoteList(e.Values)))
		case metav1.LabelSelectorOpExists:
			cs = append(cs, fmt.Sprintf("%s in %s", k, l))
		case metav1.LabelSelectorOpDoesNotExist:
			cs = append(cs, fmt.Sprintf("!(%s in %s)", k, l))
		default:
			return "", untranslatable("a label selector operator %q", e.Operator)
		}
	}
	return and(cs...), nil
}

// glob is a CEL condition for path.Match(pattern, s) over the string
// expression s; patterns with character classes or escapes are not
// translated.
func glob(pattern, s string) (string, error) {
	if !strings.ContainsAny(pattern, "*?[\\") {
		return fmt.Sprintf("%s == %s", s, quote(pattern)), nil
	}
	if strings.ContainsAny(pattern, "[\\") {
		return "", untranslatable("the name pattern %q (character classes)", pattern)
	}
	var re strings.Builder
	re.WriteString("^")
	for _, c := range pattern {
		switch c {
		case '*':
			re.WriteString("[^/]*")
		case '?':
			re.WriteString("[^/]")
		default:
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	re.WriteString("$")
	return fmt.Sprintf("%s.matches(%s)", s, quote(re.String())), nil
}

// globs is a CEL condition for any of patterns matching s.
func globs(patterns []string, s string) (string, error) {
	if len(patterns) == 0 || slices.Contains(patterns, "*") {
		return "true", nil
	}
	cs := make([]string, 0, len(patterns))
	for _, p := range patterns {
		c, err := glob(p, s)
		if err != nil {
			return "", err
		}
		cs = append(cs, c)
	}
	return or(cs...), nil
}

type metav1LabelSelector = metav1.LabelSelector

// emptyAsNil is nil for an empty selector (the rule kinds treat one as
// none).
func emptyAsNil(s *metav1.LabelSelector) *metav1.LabelSelector {
	if s == nil || len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0 {
		return nil
	}
	return s
}
