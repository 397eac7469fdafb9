package source

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	sigsjson "sigs.k8s.io/json"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// IsModRule reports whether a document is a ModRule of api.kubemod.io.
func IsModRule(d *Document) bool {
	return d.Kind() == v1beta1.Kind && strings.HasPrefix(d.APIVersion(), v1beta1.Group+"/")
}

// DecodeModRule decodes a ModRule strictly: unknown or duplicate fields and
// values of the wrong type are errors naming the field.
func DecodeModRule(d *Document) (*v1beta1.ModRule, error) {
	if d.APIVersion() != v1beta1.GroupVersion.String() {
		return nil, fmt.Errorf("%s: apiVersion %q is not served; use %s", d.Origin, d.APIVersion(), v1beta1.GroupVersion)
	}
	name := d.Key()
	var mr v1beta1.ModRule
	strict, err := sigsjson.UnmarshalStrict(d.JSON, &mr)
	if err != nil {
		// encoding/json names the Go struct and type; say which field
		// of the manifest, with its indices, and what it must be.
		if m := value.FindMismatch(d.Object, reflect.TypeFor[v1beta1.ModRule]()); m != nil {
			return nil, fmt.Errorf("%s: ModRule %s: %w", d.Origin, name, m)
		}
		return nil, fmt.Errorf("%s: ModRule %s: %v", d.Origin, name, err)
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return nil, fmt.Errorf("%s: ModRule %s: %s", d.Origin, name, strings.Join(msgs, "; "))
	}
	return &mr, nil
}

// LoadResult is what LoadRules found.
type LoadResult struct {
	Rules []*rules.Rule
	// Skipped names the documents that are not ModRules.
	Skipped []string
	// Errors holds one error per rule (or document) that failed to load;
	// each names the document, the rule, the field and the position.
	// Duplicates are among them too.
	Errors []error
	// Duplicates holds one error (ErrDuplicateRule) per ModRule defined
	// again with the namespace/name of an earlier document; the later
	// definitions are not in Rules. A set of rules with duplicates must not
	// serve: which definition the author meant cannot be known.
	Duplicates []error
}

// ErrDuplicateRule marks two documents that define the same ModRule
// (namespace/name): one would silently replace the other.
var ErrDuplicateRule = errors.New("duplicate ModRule")

// LoadRules decodes and compiles every ModRule among docs. Rules that fail
// are reported in Errors and also returned (with Err set) when they could be
// decoded, so that callers can keep them visible. The rules share their
// parsed select expressions and regular expressions (one rules.Cache per
// call).
func LoadRules(docs []Document) LoadResult { return loadRules(docs, rules.NewCache()) }

// loadRules is LoadRules compiling with cache (nil: none).
func loadRules(docs []Document, cache *rules.Cache) LoadResult {
	// Decoding and compiling are independent per document: done in
	// parallel, reported in document order.
	type outcome struct {
		rule    *rules.Rule
		skipped string
		err     error
	}
	out := make([]outcome, len(docs))
	forEach(len(docs), func(i int) {
		d, o := &docs[i], &out[i]
		if !IsModRule(d) {
			o.skipped = fmt.Sprintf("%s: %s %q is not a ModRule", d.Origin, d.Kind(), d.Name())
			return
		}
		mr, err := DecodeModRule(d)
		if err != nil {
			o.err = err
			return
		}
		o.rule, err = rules.CompileWith(mr, cache)
		if err != nil {
			o.err = fmt.Errorf("%s: %w", d.Origin, err)
		}
	})
	var res LoadResult
	seen := map[string]string{} // namespace/name -> origin of its first definition
	for i, o := range out {
		if o.skipped != "" {
			res.Skipped = append(res.Skipped, o.skipped)
			continue
		}
		key := docs[i].Key()
		if first, dup := seen[key]; dup {
			err := fmt.Errorf("%w: ModRule %s is defined twice: in %s and in %s", ErrDuplicateRule, key, first, docs[i].Origin)
			res.Errors = append(res.Errors, err)
			res.Duplicates = append(res.Duplicates, err)
			continue
		}
		seen[key] = docs[i].Origin
		if o.err != nil {
			res.Errors = append(res.Errors, o.err)
		}
		if o.rule != nil {
			res.Rules = append(res.Rules, o.rule)
		}
	}
	return res
}
