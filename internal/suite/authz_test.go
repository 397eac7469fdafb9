package suite

import (
	"context"
	"testing"

	"github.com/modwright/modwright/internal/engine"
)

func TestDecisions(t *testing.T) {
	ds := Decisions{
		{User: "alice", Verb: "delete", Allowed: true, Reason: "alice may"},
		{Verb: "get", Resource: "secrets", Namespace: "a", Allowed: true},
		{Verb: "get", Resource: "secrets", Allowed: false, Reason: "elsewhere"},
	}
	for _, tc := range []struct {
		q       engine.AuthzAttributes
		allowed bool
		reason  string
	}{
		{engine.AuthzAttributes{User: engine.UserInfo{Username: "alice"}, Verb: "delete", Resource: "pods"}, true, "alice may"},
		{engine.AuthzAttributes{User: engine.UserInfo{Username: "bob"}, Verb: "delete", Resource: "pods"}, false, "no decision in the test suite"},
		{engine.AuthzAttributes{Verb: "get", Resource: "secrets", Namespace: "a"}, true, ""},
		{engine.AuthzAttributes{Verb: "get", Resource: "secrets", Namespace: "b"}, false, "elsewhere"},
	} {
		ok, reason, err := ds.Authorize(context.Background(), tc.q)
		if err != nil || ok != tc.allowed || reason != tc.reason {
			t.Errorf("%+v: %v %q %v, want %v %q", tc.q, ok, reason, err, tc.allowed, tc.reason)
		}
	}
}
