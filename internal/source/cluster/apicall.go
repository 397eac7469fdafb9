package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
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

	group singleflight.Group
	mu    sync.Mutex
	cache map[string]apiEntry
}

type apiEntry struct {
	body    []byte
	expires time.Time
}

var _ engine.APIReader = (*APIClient)(nil)

// maxCachedResponses bounds the responses kept; beyond it the expired
// ones are dropped, then the cache is emptied.
const maxCachedResponses = 4096

func (c *APIClient) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Call reads the API server.
func (c *APIClient) Call(ctx context.Context, call engine.APICall) ([]byte, error) {
	key := call.Method + " " + call.Path + "\x00" + string(call.Data)
	if c.TTL > 0 {
		c.mu.Lock()
		e, ok := c.cache[key]
		c.mu.Unlock()
		if ok && c.now().Before(e.expires) {
			return e.body, nil
		}
	}
	v, err, _ := c.group.Do(key, func() (any, error) {
		body, err := c.read(ctx, call)
		if err != nil {
			return nil, err
		}
		if c.TTL > 0 {
			c.keep(key, body)
		}
		return body, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

func (c *APIClient) keep(key string, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cache == nil {
		c.cache = map[string]apiEntry{}
	}
	if len(c.cache) >= maxCachedResponses {
		now := c.now()
		for k, e := range c.cache {
			if !now.Before(e.expires) {
				delete(c.cache, k)
			}
		}
		if len(c.cache) >= maxCachedResponses {
			clear(c.cache)
		}
	}
	c.cache[key] = apiEntry{body: body, expires: c.now().Add(c.TTL)}
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
