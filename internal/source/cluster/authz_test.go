package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/source/cluster"
)

type fakeReviews struct {
	calls int
	allow bool
	err   error
	last  *authorizationv1.SubjectAccessReview
}

func (f *fakeReviews) Create(_ context.Context, sar *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	f.calls++
	f.last = sar
	if f.err != nil {
		return nil, f.err
	}
	out := sar.DeepCopy()
	out.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: f.allow, Reason: "rbac"}
	return out, nil
}

func TestAuthorizer(t *testing.T) {
	now := time.Unix(1000, 0)
	rev := &fakeReviews{allow: true}
	z := &cluster.Authorizer{Reviews: rev, TTL: 10 * time.Second, Now: func() time.Time { return now }}
	q := engine.AuthzAttributes{User: engine.UserInfo{Username: "alice", Groups: []string{"dev"}, Extra: map[string][]string{"b": {"2"}, "a": {"1"}}},
		Verb: "delete", ResourceRequest: true, Group: "apps", Resource: "deployments", Namespace: "team-a", Name: "web"}
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		ok, reason, err := z.Authorize(ctx, q)
		if err != nil || !ok || reason != "rbac" {
			t.Fatalf("Authorize = %v %q %v", ok, reason, err)
		}
	}
	if rev.calls != 1 {
		t.Errorf("%d reviews, want 1 (cached)", rev.calls)
	}
	ra := rev.last.Spec.ResourceAttributes
	if rev.last.Spec.User != "alice" || ra == nil || ra.Verb != "delete" || ra.Group != "apps" || ra.Resource != "deployments" || ra.Namespace != "team-a" || ra.Name != "web" {
		t.Errorf("review %+v", rev.last.Spec)
	}
	now = now.Add(11 * time.Second)
	rev.allow = false
	if ok, _, _ := z.Authorize(ctx, q); ok || rev.calls != 2 {
		t.Errorf("after the TTL: allowed %v after %d reviews, want a new review denying", ok, rev.calls)
	}
	rev.err = errors.New("down")
	q.Verb = "get"
	if _, _, err := z.Authorize(ctx, q); !errors.Is(err, rev.err) {
		t.Errorf("error %v, want the API's", err)
	}
	nr := engine.AuthzAttributes{User: engine.UserInfo{Username: "bob"}, Verb: "get", Path: "/healthz"}
	rev.err = nil
	if _, _, err := z.Authorize(ctx, nr); err != nil || rev.last.Spec.NonResourceAttributes == nil || rev.last.Spec.NonResourceAttributes.Path != "/healthz" {
		t.Errorf("non-resource review %+v, %v", rev.last.Spec, err)
	}
}

// TestAuthorizerLongKeys: a name an object made can be long; the cache
// still answers it (and a different long name is asked anew) while keeping
// its digest only.
func TestAuthorizerLongKeys(t *testing.T) {
	rev := &fakeReviews{allow: true}
	z := &cluster.Authorizer{Reviews: rev}
	long := func(c byte) engine.AuthzAttributes {
		return engine.AuthzAttributes{User: engine.UserInfo{Username: "system:serviceaccount:team-a:modwright-rules"}, Verb: "get",
			ResourceRequest: true, Resource: "configmaps", Namespace: "team-a", Name: strings.Repeat(string(c), 8000)}
	}
	ctx := context.Background()
	for _, q := range []engine.AuthzAttributes{long('a'), long('a'), long('b')} {
		if ok, _, err := z.Authorize(ctx, q); !ok || err != nil {
			t.Fatalf("Authorize: %v %v", ok, err)
		}
	}
	if rev.calls != 2 {
		t.Errorf("%d reviews, want 2 (one cached, two names)", rev.calls)
	}
}
