package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/rest"

	"github.com/modwright/modwright/internal/engine"
)

// ErrResponseTooLarge is in the chain of the error of an API read whose
// response exceeds APIClient.MaxBytes.
var ErrResponseTooLarge = errors.New("the API response is too large")

// APIClient is the engine's APIReader in the cluster: it reads URL paths
// of the API server with the operator's identity (Policies' apiCall
// context entries), each read bounded by Timeout and MaxBytes, and keeps
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
	key := call.Method + " " + call.Path + "\x00" + string(call.Data)
	return c.cache.get(key, c.TTL, c.now, func() ([]byte, error) { return c.read(ctx, call) })
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
