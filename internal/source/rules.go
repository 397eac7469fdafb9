package source

import (
	"fmt"
	"strings"

	sigsjson "sigs.k8s.io/json"

	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/internal/rules"
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
	name := d.Name()
	if d.Namespace() != "" {
		name = d.Namespace() + "/" + name
	}
	var mr v1beta1.ModRule
	strict, err := sigsjson.UnmarshalStrict(d.JSON, &mr)
	if err != nil {
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
	Errors []error
}

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
	for _, o := range out {
		if o.skipped != "" {
			res.Skipped = append(res.Skipped, o.skipped)
		}
		if o.err != nil {
			res.Errors = append(res.Errors, o.err)
		}
		if o.rule != nil {
			res.Rules = append(res.Rules, o.rule)
		}
	}
	return res
}
