package cluster

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/modwright/modwright/internal/engine"
)

// SubjectAccessReviewer creates SubjectAccessReviews: client-go's
// AuthorizationV1().SubjectAccessReviews().
type SubjectAccessReviewer interface {
	Create(ctx context.Context, sar *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// Authorizer answers rules' authorization questions (CEL's authorizer)
// with SubjectAccessReviews, as the API server's admission policies do.
// Each question is asked once per TTL (answers are cached, at most
// MaxEntries of them), and each review is bounded by Timeout.
type Authorizer struct {
	Reviews SubjectAccessReviewer
	// Timeout bounds one review (default 2 s; the request's deadline
	// bounds it too); TTL is how long an answer is reused (default 10 s);
	// MaxEntries bounds the cache (default 10,000: when full it starts
	// over). Now is the clock (default time.Now).
	Timeout    time.Duration
	TTL        time.Duration
	MaxEntries int
	Now        func() time.Time

	mu    sync.Mutex
	cache map[string]answer
}

type answer struct {
	allowed bool
	reason  string
	expires time.Time
}

var _ engine.Authorizer = (*Authorizer)(nil)

// Authorize asks the API server whether a.User may do what a says.
func (z *Authorizer) Authorize(ctx context.Context, a engine.AuthzAttributes) (bool, string, error) {
	now := time.Now
	if z.Now != nil {
		now = z.Now
	}
	key := authzKey(a)
	z.mu.Lock()
	if ans, ok := z.cache[key]; ok && now().Before(ans.expires) {
		z.mu.Unlock()
		return ans.allowed, ans.reason, nil
	}
	z.mu.Unlock()

	timeout := z.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	extra := make(map[string]authorizationv1.ExtraValue, len(a.User.Extra))
	for k, v := range a.User.Extra {
		extra[k] = v
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: a.User.Username, UID: a.User.UID, Groups: a.User.Groups, Extra: extra,
	}}
	if a.ResourceRequest {
		sar.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace: a.Namespace, Verb: a.Verb, Group: a.Group, Version: a.Version,
			Resource: a.Resource, Subresource: a.Subresource, Name: a.Name,
		}
	} else {
		sar.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: a.Path, Verb: a.Verb}
	}
	out, err := z.Reviews.Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("SubjectAccessReview: %w", err)
	}
	allowed := out.Status.Allowed && !out.Status.Denied
	reason := out.Status.Reason
	if out.Status.EvaluationError != "" {
		return false, reason, fmt.Errorf("SubjectAccessReview: %s", out.Status.EvaluationError)
	}

	ttl := z.TTL
	if ttl <= 0 {
		ttl = 10 * time.Second
	}
	limit := z.MaxEntries
	if limit <= 0 {
		limit = 10000
	}
	z.mu.Lock()
	if z.cache == nil || len(z.cache) >= limit {
		z.cache = make(map[string]answer)
	}
	z.cache[key] = answer{allowed: allowed, reason: reason, expires: now().Add(ttl)}
	z.mu.Unlock()
	return allowed, reason, nil
}

// authzKey identifies a question: the user and every attribute.
func authzKey(a engine.AuthzAttributes) string {
	var b strings.Builder
	for _, s := range []string{a.User.Username, a.User.UID, strings.Join(a.User.Groups, ","), a.Verb, a.Group, a.Version, a.Resource, a.Subresource, a.Namespace, a.Name, a.Path} {
		b.WriteString(s)
		b.WriteByte(0)
	}
	if a.ResourceRequest {
		b.WriteByte('r')
	}
	keys := make([]string, 0, len(a.User.Extra))
	for k := range a.User.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.WriteString(k + "=" + strings.Join(a.User.Extra[k], ",") + "\x00")
	}
	if b.Len() > maxKeyBytes {
		// A name or path an object made can be long: the cache holds
		// its digest, so that MaxEntries bounds its memory.
		sum := sha256.Sum256([]byte(b.String()))
		return string(sum[:])
	}
	return b.String()
}

// maxKeyBytes is the longest cache key kept as it is.
const maxKeyBytes = 256
