package source

import (
	"errors"
	"fmt"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/rules"
)

// LoadResult is what LoadRules found.
type LoadResult struct {
	Rules []engine.Rule
	// Skipped names the documents that are of no kind the registry holds
	// (their apiVersion and kind, and the kinds served).
	Skipped []string
	// Errors holds one error per rule (or document) that failed to load;
	// each names the document, the rule, the field and the position.
	// Duplicates are among them too.
	Errors []error
	// Duplicates holds one error (ErrDuplicateRule) per rule defined
	// again with the kind (under any of its names) and namespace/name of an
	// earlier document; the later
	// definitions are not in Rules. A set of rules with duplicates must not
	// serve: which definition the author meant cannot be known.
	Duplicates []error
	// Deprecated names the rules written under a kind's former name
	// (kinds.Renamed), each with what to write instead; they load.
	Deprecated []string
}

// ErrDuplicateRule marks two documents that define the same rule (kind and
// namespace/name): one would silently replace the other.
var ErrDuplicateRule = errors.New("duplicate rule")

// Where names where in its file the error of document d is: file:line:
// column of the first field a *rules.CompileError names (where an editor
// jumps), else the document's origin.
func Where(l *Locator, d *Document, err error) string {
	var ce *rules.CompileError
	if !errors.As(err, &ce) || len(ce.Errors) == 0 {
		return d.Origin
	}
	fe := ce.Errors[0]
	line, col, ok := l.Locate(d, fe.Field, fe.Pos)
	if !ok {
		return d.Origin
	}
	return fmt.Sprintf("%s:%d:%d", d.Path, line, col)
}

// NotARule says that document d is of no kind of reg: its apiVersion and
// kind, and the kinds reg serves.
func NotARule(d *Document, reg *kinds.Registry) string {
	av := d.APIVersion()
	if av == "" {
		av = "(no apiVersion)"
	}
	what := av + " " + d.Kind()
	if d.Kind() == "" {
		what = av + " (no kind)"
	}
	if n := d.Name(); n != "" {
		what += fmt.Sprintf(" %q", n)
	}
	return fmt.Sprintf("%s: %s is not a rule of a kind served here (%s)", d.Origin, what, reg.Served())
}

// LoadRules decodes and compiles every rule among docs, each with the kind
// of reg that owns it. Rules that fail are reported in Errors and also
// returned (with Info().Err set) when they could be decoded, so that
// callers can keep them visible. Decoding and compiling are independent per
// document: done in parallel, reported in document order.
//
// Definitions (kinds.Definer: a ConstraintTemplate) are compiled first and
// handed to their kind; one that fails is reported in Errors, and the rules
// compiled against it say so.
func LoadRules(docs []Document, reg *kinds.Registry) LoadResult {
	ptrs := make([]*kinds.Manifest, len(docs))
	for i := range docs {
		ptrs[i] = &docs[i]
	}
	reg, defErrs := reg.WithDefinitions(ptrs)
	type outcome struct {
		rule       engine.Rule
		kind       string // the current name
		skipped    string
		deprecated string
		err        error
		definition bool
	}
	out := make([]outcome, len(docs))
	ForEach(len(docs), func(i int) {
		d, o := &docs[i], &out[i]
		if reg.Defines(d) {
			o.err = defErrs[i]
			o.definition = true
			return
		}
		k := reg.For(d)
		if k == nil {
			o.skipped = NotARule(d, reg)
			return
		}
		o.kind = kinds.RuleKind(k, d)
		if dep := kinds.Deprecation(k); dep != "" {
			o.deprecated = fmt.Sprintf("%s: %s %s: %s", d.Origin, k.Name(), d.Key(), dep)
		}
		o.rule, o.err = k.Compile(d)
		if o.rule != nil {
			o.rule.Info().Group = k.Group()
		}
	})
	var res LoadResult
	var loc Locator
	type id struct{ kind, key string }
	seen := map[id]string{} // kind and namespace/name -> origin of its first definition
	for i, o := range out {
		if o.skipped != "" {
			res.Skipped = append(res.Skipped, o.skipped)
			continue
		}
		if o.definition {
			if o.err != nil {
				res.Errors = append(res.Errors, fmt.Errorf("%s: %w", Where(&loc, &docs[i], o.err), o.err))
			}
			continue
		}
		key := id{o.kind, docs[i].Key()}
		if first, dup := seen[key]; dup {
			err := fmt.Errorf("%w: %s %s is defined twice: in %s and in %s", ErrDuplicateRule, o.kind, key.key, first, docs[i].Origin)
			res.Errors = append(res.Errors, err)
			res.Duplicates = append(res.Duplicates, err)
			continue
		}
		seen[key] = docs[i].Origin
		if o.deprecated != "" {
			res.Deprecated = append(res.Deprecated, o.deprecated)
		}
		if o.err != nil {
			// Located here, serially, each document's text parsed once.
			res.Errors = append(res.Errors, fmt.Errorf("%s: %w", Where(&loc, &docs[i], o.err), o.err))
		}
		if o.rule != nil {
			res.Rules = append(res.Rules, o.rule)
		}
	}
	return res
}
