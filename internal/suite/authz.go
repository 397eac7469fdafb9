package suite

import (
	"context"

	"github.com/modwright/modwright/internal/engine"
)

// Decision is one authorization decision of a suite: the fields given must
// equal the question's (empty ones match anything).
type Decision struct {
	User        string `json:"user,omitempty"`
	Verb        string `json:"verb,omitempty"`
	Group       string `json:"group,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	Path        string `json:"path,omitempty"`
	Allowed     bool   `json:"allowed"`
	Reason      string `json:"reason,omitempty"`
}

// Decisions answer authorization questions from a suite's table.
type Decisions []Decision

var _ engine.Authorizer = Decisions(nil)

// Authorize answers with the first decision that matches; no match is a
// denial with the reason "no decision in the test suite".
func (ds Decisions) Authorize(_ context.Context, a engine.AuthzAttributes) (bool, string, error) {
	for _, d := range ds {
		if matches(d.User, a.User.Username) && matches(d.Verb, a.Verb) && matches(d.Group, a.Group) &&
			matches(d.Resource, a.Resource) && matches(d.Subresource, a.Subresource) &&
			matches(d.Namespace, a.Namespace) && matches(d.Name, a.Name) && matches(d.Path, a.Path) {
			return d.Allowed, d.Reason, nil
		}
	}
	return false, "no decision in the test suite", nil
}

func matches(want, got string) bool { return want == "" || want == got }
