package admissionpolicy

import (
	"errors"
	"fmt"
	"strings"
)

// Lint codes (the front ends print them; every rule kind's are in package
// kinds).
const (
	CodeUndecodable = "E002" // a policy cannot be decoded
	CodeInvalid     = "E003" // a policy fails the API server's validation
	CodeUnbound     = "W301" // a policy no binding names
	CodeNoPolicy    = "W302" // a binding whose policy is not among the documents
)

// Doc is one document to lint, named by where it is.
type Doc struct {
	Origin string
	Object map[string]any
}

// Finding is one problem Lint found.
type Finding struct {
	Warning bool // else an error
	Code    string
	Origin  string
	Kind    string
	Name    string
	Field   string
	Pos     int // 1-based column in the field's expression, or 0
	Message string
	Hint    string
}

// Lint checks the Validating and MutatingAdmissionPolicies and bindings
// among docs (others are ignored): each as the API server checks it when
// it is created, and policies and bindings that do not name each other.
func Lint(docs []Doc) []Finding {
	var out []Finding
	type ref struct{ kind, name string }
	policies := map[ref]string{} // where each policy is
	bound := map[ref]bool{}
	var bindings []Doc
	for _, d := range docs {
		if !Handles(d.Object) {
			continue
		}
		kind, name := kindName(d.Object)
		if strings.HasSuffix(kind, "Binding") {
			bindings = append(bindings, d)
		} else {
			policies[ref{kind, name}] = d.Origin
		}
		err := NewSet().Add(d.Object)
		var invalid *InvalidError
		switch {
		case errors.As(err, &invalid):
			for _, fe := range invalid.Fields {
				out = append(out, Finding{Code: CodeInvalid, Origin: d.Origin, Kind: kind, Name: name,
					Field: fe.Field, Pos: Column(fe), Message: fe.ErrorBody(), Hint: "the API server refuses to store the policy"})
			}
		case err != nil:
			out = append(out, Finding{Code: CodeUndecodable, Origin: d.Origin, Kind: kind, Name: name,
				Message: strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": ")})
		}
	}
	for _, b := range bindings {
		kind, name := kindName(b.Object)
		spec, _ := b.Object["spec"].(map[string]any)
		policy, _ := spec["policyName"].(string)
		p := ref{strings.TrimSuffix(kind, "Binding"), policy}
		bound[p] = true
		if _, ok := policies[p]; !ok {
			out = append(out, Finding{Warning: true, Code: CodeNoPolicy, Origin: b.Origin, Kind: kind, Name: name, Field: "spec.policyName",
				Message: fmt.Sprintf("%s %q is not among the rules", p.kind, policy), Hint: "offline the binding does nothing; give the policy too"})
		}
	}
	for _, d := range docs {
		kind, name := kindName(d.Object)
		p := ref{kind, name}
		if origin, ok := policies[p]; ok && origin == d.Origin && !bound[p] {
			out = append(out, Finding{Warning: true, Code: CodeUnbound, Origin: d.Origin, Kind: p.kind, Name: p.name,
				Message: "no " + p.kind + "Binding among the rules names this policy: the API server never runs it", Hint: "add a binding with spec.policyName: " + p.name})
		}
	}
	return out
}

// kindName is a document's kind and metadata.name.
func kindName(obj map[string]any) (kind, name string) {
	kind, _ = obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	name, _ = md["name"].(string)
	return kind, name
}
