package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"

	"github.com/modwright/modwright/internal/engine"
)

// ErrResponseTooLarge is in the chain of the error of an API read whose
// response exceeds APIClient.MaxBytes.
var ErrResponseTooLarge = errors.New("the API response is too large")

// APIClient is the engine's APIReader in the cluster: it reads URL paths
// of the API server with the operator's identity (Policies' apiCall
// context entries), for a namespaced rule only what its namespace's rule
// reader may read (allowed), never the operator's Secrets, each read bounded by Timeout and MaxBytes, and keeps
// each distinct (method, path, body) response for TTL: a repeated read
// within TTL makes no request, and concurrent identical reads share one.
// Errors are not kept.
type APIClient struct {
	REST rest.Interface // an unversioned client of the API server (discovery's)
	// Timeout bounds one read; default 5 s.
	Timeout time.Duration
	// MaxBytes bounds a response; default 2 MiB.
	MaxBytes int64
	// TTL is how long a response is reused; 0: not at all.
	TTL time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// AllowPOST lets apiCall entries POST (SubjectAccessReview-style
	// calls); off by default: a POST with the operator's identity can
	// create objects.
	AllowPOST bool
	// Authorizer answers whether a namespaced rule's reader may make a
	// call (a SubjectAccessReview); a call with an Owner and no
	// Authorizer is refused.
	Authorizer engine.Authorizer
	// RuleReader is the service account, in a namespaced rule's own
	// namespace, whose rights its calls have (DefaultRuleReader when
	// empty): the operator reads for it only what that account may.
	RuleReader string
	// Protected is the operator's namespace: its Secrets (its serving
	// certificate and CA key) are never read for any rule, nor is a list
	// of Secrets across namespaces.
	Protected string

	cache responses[[]byte]
}

// ErrMethodNotAllowed is in the chain of the error of an apiCall POST
// when APIClient.AllowPOST is off.
var ErrMethodNotAllowed = errors.New("the method is not allowed")

var _ engine.APIReader = (*APIClient)(nil)

func (c *APIClient) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Call reads the API server.
func (c *APIClient) Call(ctx context.Context, call engine.APICall) ([]byte, error) {
	if err := c.allowed(ctx, call); err != nil {
		return nil, err
	}
	key := call.Method + " " + call.Path + "\x00" + string(call.Data)
	return c.cache.get(key, c.TTL, c.now, func() ([]byte, error) { return c.read(ctx, call) }, func(b []byte) int { return len(b) })
}

func (c *APIClient) read(ctx context.Context, call engine.APICall) ([]byte, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	limit := c.MaxBytes
	if limit <= 0 {
		limit = 2 << 20
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var req *rest.Request
	switch call.Method {
	case "", "GET":
		req = c.REST.Get()
	case "POST":
		if !c.AllowPOST {
			return nil, fmt.Errorf("%w: POST (the operator's --api-call-allow-post allows apiCall POSTs, for SubjectAccessReview-style calls; off by default)", ErrMethodNotAllowed)
		}
		req = c.REST.Post().Body(bytes.NewReader(call.Data)).SetHeader("Content-Type", "application/json")
	default:
		return nil, fmt.Errorf("method %q: only GET and POST are supported", call.Method)
	}
	stream, err := req.AbsPath(call.Path).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("the API server answered: %w", err)
	}
	defer stream.Close()
	body, err := io.ReadAll(io.LimitReader(stream, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrResponseTooLarge, limit)
	}
	return body, nil
}

// DefaultRuleReader is the service account whose rights a namespaced
// rule's API reads have, in the rule's namespace.
const DefaultRuleReader = "modwright-rules"

// ErrForbidden is in the chain of the error of a call the rule's reader
// may not make, or one into the operator's Secrets.
var ErrForbidden = engine.ErrReadForbidden

// allowed refuses a read of the operator's Secrets (any rule's) and a
// namespaced rule's call its reader may not make, asked of the API server
// as a SubjectAccessReview (Authorizer's cache: 10 s).
func (c *APIClient) allowed(ctx context.Context, call engine.APICall) error {
	method := call.Method
	if method == "" {
		method = "GET"
	}
	u, err := url.Parse(call.Path)
	if err != nil {
		return fmt.Errorf("%w: %q is not a URL path: %v", ErrForbidden, call.Path, err)
	}
	// The API server's own reading of a path (verb, group, resource, ...).
	infos := &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	info, err := infos.NewRequestInfo(&http.Request{Method: method, URL: u})
	if err != nil {
		return fmt.Errorf("%w: %q: %v", ErrForbidden, call.Path, err)
	}
	if info.IsResourceRequest && info.APIGroup == "" && info.Resource == "secrets" && (info.Namespace == "" || info.Namespace == c.Protected) {
		where := "across namespaces"
		if info.Namespace != "" {
			where = "in " + info.Namespace + ", the operator's namespace"
		}
		return fmt.Errorf("%w: Secrets %s are never read for a rule (the operator's own credentials are there)", ErrForbidden, where)
	}
	if call.Owner == "" {
		return nil // a cluster-scoped rule reads as the operator
	}
	reader := c.RuleReader
	if reader == "" {
		reader = DefaultRuleReader
	}
	user := engine.RuleReaderUser(call.Owner, reader)
	if c.Authorizer == nil {
		return fmt.Errorf("%w: no authorizer to ask whether %s may %s %s", ErrForbidden, user.Username, info.Verb, call.Path)
	}
	a := engine.AuthzAttributes{User: user, Verb: info.Verb, ResourceRequest: info.IsResourceRequest, Path: u.Path,
		Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource, Subresource: info.Subresource, Namespace: info.Namespace, Name: info.Name}
	ok, reason, err := c.Authorizer.Authorize(ctx, a)
	if err != nil {
		return fmt.Errorf("asking whether %s may %s %s: %w", user.Username, info.Verb, call.Path, err)
	}
	if !ok {
		what := info.Resource
		if info.Subresource != "" {
			what += "/" + info.Subresource
		}
		if reason != "" {
			reason = ": " + reason
		}
		return fmt.Errorf("%w: a rule in %s reads as %s, which may not %s %s in %s (grant it with a Role and RoleBinding)%s", ErrForbidden, call.Owner, user.Username, info.Verb, what, info.Namespace, reason)
	}
	return nil
}
