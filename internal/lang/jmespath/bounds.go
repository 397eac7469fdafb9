package jmespath

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/modwright/modwright/internal/lang"
)

// call calls function name of the table: before a function that can
// multiply its input runs, the size of its result is estimated from its
// arguments and refused beyond MaxOutput (Go's strings.Repeat or
// ReplaceAll would otherwise allocate it first); after any function, its
// result is sized and counted as work.
func (ev *evaluator) call(name string, args []any) (any, error) {
	if est, ok := ev.estimate(name, args); ok && est > MaxOutput {
		return nil, &FunctionError{Function: name, Err: lang.Limit(fmt.Errorf("%w: the result would be about %d bytes, at most %d", ErrTooLarge, est, MaxOutput))}
	}
	v, err := ev.table.CallFunction(name, args)
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case nil, bool, float64:
		return v, nil
	case string:
		return v, ev.step(1 + len(x)/64)
	}
	if s := ev.size(v); s > MaxOutput {
		return nil, &FunctionError{Function: name, Err: tooLarge(s)}
	}
	return v, ev.step(1)
}

// estimate is an upper bound of the size of name's result over args, for
// the functions whose result can be much larger than their arguments;
// ok is false for the others. The arguments' types are not checked yet
// (the table does that): an argument of another type gives no estimate.
func (ev *evaluator) estimate(name string, args []any) (int, bool) {
	s := func(i int) (string, bool) {
		if i >= len(args) {
			return "", false
		}
		x, ok := args[i].(string)
		return x, ok
	}
	n := func(i int) (float64, bool) {
		if i >= len(args) {
			return 0, false
		}
		x, ok := args[i].(float64)
		return x, ok
	}
	switch name {
	case "replace_all", "replace":
		// Kyverno's replace(str, old, new, n), replace_all(str, old, new).
		str, ok1 := s(0)
		old, ok2 := s(1)
		repl, ok3 := s(2)
		if !ok1 || !ok2 || !ok3 {
			return 0, false
		}
		count := 0
		if len(repl) > len(old) {
			if old == "" {
				count = utf8.RuneCountInString(str) + 1
			} else {
				count = strings.Count(str, old)
			}
		}
		if max, ok := n(3); ok && max >= 0 && float64(count) > max {
			count = int(max)
		}
		return scalarSize + len(str) + count*len(repl), true
	case "pad_left", "pad_right":
		str, _ := s(0)
		w, ok := n(1)
		if !ok {
			return 0, false
		}
		if w > float64(MaxOutput) {
			return MaxOutput + 1, true
		}
		return scalarSize + max(int(w), len(str)), true
	case "join":
		if len(args) < 2 {
			return 0, false
		}
		sep, ok1 := args[0].(string)
		items, ok2 := args[1].([]any)
		if !ok1 || !ok2 {
			return 0, false
		}
		total := scalarSize
		for _, e := range items {
			x, _ := e.(string)
			if total += len(x) + len(sep); total > MaxOutput {
				break
			}
		}
		return total, true
	case "regex_replace_all", "regex_replace_all_literal":
		return estimateRegexReplace(name, args)
	case "to_string":
		// The measure counts more than the JSON text takes.
		if len(args) == 0 {
			return 0, false
		}
		return ev.size(args[0]), true
	case "base64_encode":
		str, ok := s(0)
		if !ok {
			return 0, false
		}
		return scalarSize + (len(str)+2)/3*4, true
	}
	return 0, false
}

// estimateRegexReplace bounds regex_replace_all(regex, src, repl): every
// match (at most len(src)+1, counted when the quick bound is too large)
// becomes repl, each $n of which expands to at most the match.
func estimateRegexReplace(name string, args []any) (int, bool) {
	if len(args) < 3 {
		return 0, false
	}
	src, repl := str(args, 1), str(args, 2)
	refs := 0
	if name == "regex_replace_all" {
		refs = strings.Count(repl, "$")
	}
	matches := len(src) + 1
	quick := scalarSize + len(src) + matches*len(repl) + refs*len(src)
	if quick <= MaxOutput {
		return quick, true
	}
	pattern, ok := args[0].(string)
	if !ok {
		return 0, false
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return 0, false // the function reports it
	}
	// Count the matches up to the number that would pass the bound.
	limit := -1
	if len(repl) > 0 {
		limit = MaxOutput/len(repl) + 1
	}
	count := len(re.FindAllStringIndex(src, limit))
	return scalarSize + len(src) + count*len(repl) + refs*len(src), true
}
