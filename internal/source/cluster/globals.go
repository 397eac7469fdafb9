package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/jmespath"
	"github.com/modwright/modwright/internal/value"
)

// The bounds of Globals (its zero values take these).
const (
	// DefaultGlobalMaxObjects bounds the objects one kubernetesResource
	// entry holds.
	DefaultGlobalMaxObjects = 10000
	// DefaultGlobalMaxBytes bounds the JSON size of one entry's data.
	DefaultGlobalMaxBytes = 64 << 20
	// DefaultGlobalRefresh is an apiCall entry's refreshInterval when it
	// gives none (Kyverno's default); MinGlobalRefresh the shortest taken.
	DefaultGlobalRefresh = 10 * time.Minute
	MinGlobalRefresh     = time.Second
	// defaultGlobalRetries: an apiCall entry's retryLimit when it gives
	// none (Kyverno's default).
	defaultGlobalRetries = 3
)

// gctxGroupResource is Kyverno's GlobalContextEntry resource; its served
// version is the API server's preferred one (kyverno.io/v2 from
// modwright's CRD, v2beta1 or v2alpha1 from older Kyverno CRDs).
var gctxGroupResource = schema.GroupVersionResource{Group: "kyverno.io", Resource: "globalcontextentries"}

// Globals is the engine's GlobalContextReader in the cluster: Kyverno's
// GlobalContextEntry objects, each kept in memory as Kyverno keeps it. A
// kubernetesResource entry holds the objects of its resource (in its
// namespace, or all), kept by an informer of their own (managed fields
// left out); an apiCall entry holds the answer of its call (urlPath
// through the API reader, service through the HTTP reader, with their
// timeouts, size limits and host lists), made again every
// refreshInterval and retried retryLimit times. Each entry's projections
// (JMESPath) are computed when its data changes. An entry's data is
// bounded (MaxObjects, MaxBytes: beyond them the entry holds an error, not
// a part); a kubernetesResource of Secrets is refused across namespaces and
// in the operator's own namespace (Protected), as for every read of a
// rule.
//
// A read of an entry not there wraps engine.ErrNoGlobalContextEntry; of an
// entry whose data is not there (yet, or any more), the entry's error.
//
// It is a manager Runnable every replica runs.
type Globals struct {
	Client dynamic.Interface
	Mapper meta.RESTMapper
	// API and HTTP make apiCall entries' calls (urlPath, service); nil:
	// such entries hold an error.
	API  engine.APIReader
	HTTP engine.HTTPReader
	Log  logr.Logger
	// Protected is the operator's namespace.
	Protected string
	// MaxObjects, MaxBytes, as above (0: the defaults).
	MaxObjects int
	MaxBytes   int64

	mu      sync.RWMutex
	entries map[string]*gentry
	gvr     schema.GroupVersionResource // the served GlobalContextEntry resource, once known
	// synced: the entries are listed (their data may still be coming), or
	// the API server serves no GlobalContextEntries (nothing to wait for).
	synced atomic.Bool
	// retry is how long a failed apiCall waits before its next attempt
	// (a test shortens it).
	retry time.Duration
}

var _ engine.GlobalContextReader = (*Globals)(nil)

// NeedLeaderElection: every replica serves reads from its own copy.
func (*Globals) NeedLeaderElection() bool { return false }

// Synced reports whether the entries are listed (each entry's own data
// may still be coming: a read of it is an error until then), or whether
// the API server serves no GlobalContextEntries: the operator's readiness
// waits for it, so that a policy does not read an entry as absent only
// because it was not listed yet.
func (g *Globals) Synced() bool { return g.synced.Load() }

// GlobalContext reads an entry's data (projection "") or one of its
// projections.
func (g *Globals) GlobalContext(_ context.Context, name, projection string) (any, error) {
	g.mu.RLock()
	e := g.entries[name]
	g.mu.RUnlock()
	if e == nil {
		return nil, fmt.Errorf("GlobalContextEntry %s: %w", name, engine.ErrNoGlobalContextEntry)
	}
	return e.get(projection)
}

// Start watches the GlobalContextEntries until ctx is done.
func (g *Globals) Start(ctx context.Context) error {
	gvr, err := g.served(ctx)
	if err != nil {
		return nil // stopped before the entries were served: nothing kept
	}
	g.mu.Lock()
	g.entries = map[string]*gentry{}
	g.gvr = gvr
	g.mu.Unlock()
	inf := dynamicinformer.NewFilteredDynamicInformer(g.Client, gvr, "", 0, cache.Indexers{}, nil).Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { g.set(ctx, o) },
		UpdateFunc: func(old, cur any) {
			if o, c := old.(*unstructured.Unstructured), cur.(*unstructured.Unstructured); o != nil && c != nil && o.GetGeneration() == c.GetGeneration() && o.GetGeneration() != 0 {
				return // its status changed
			}
			g.set(ctx, cur)
		},
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if u, ok := o.(*unstructured.Unstructured); ok {
				g.replace(u.GetName(), nil)
			}
		},
	})
	go func() {
		if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			g.synced.Store(true)
		}
	}()
	inf.Run(ctx.Done())
	g.mu.Lock()
	for name, e := range g.entries {
		e.stop()
		delete(g.entries, name)
	}
	g.mu.Unlock()
	return nil
}

// served is the GlobalContextEntry resource the API server serves: its
// preferred version, looked for until ctx ends (the CRD may come later).
func (g *Globals) served(ctx context.Context) (schema.GroupVersionResource, error) {
	for {
		gvr, err := g.Mapper.ResourceFor(gctxGroupResource)
		if err == nil {
			return gvr, nil
		}
		if meta.IsNoMatchError(err) {
			// No GlobalContextEntries served: readiness waits for none.
			g.synced.Store(true)
			meta.MaybeResetRESTMapper(g.Mapper)
		}
		g.Log.V(1).Info("GlobalContextEntries are not served yet", "error", err.Error())
		select {
		case <-ctx.Done():
			return schema.GroupVersionResource{}, ctx.Err()
		case <-time.After(10 * time.Second):
		}
	}
}

// set starts keeping an entry as it is now.
func (g *Globals) set(ctx context.Context, o any) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return
	}
	e := g.newEntry(u)
	if e.err == nil {
		e.start(ctx, g)
	} else {
		g.Log.Error(e.err, "GlobalContextEntry not kept", "name", u.GetName())
	}
	g.replace(u.GetName(), e)
}

// replace puts e (nil: none) in place of the entry of name, stopping it.
func (g *Globals) replace(name string, e *gentry) {
	g.mu.Lock()
	old := g.entries[name]
	if e == nil {
		delete(g.entries, name)
	} else {
		g.entries[name] = e
	}
	g.mu.Unlock()
	if old != nil {
		old.stop()
	}
}

// gentry is one GlobalContextEntry kept.
type gentry struct {
	name        string
	generation  int64
	resource    *schema.GroupVersionResource
	namespace   string
	call        *engine.APICall
	service     *engine.HTTPRequest
	refresh     time.Duration
	retries     int
	projections []jmespath.Projection
	maxObjects  int
	maxBytes    int64
	log         logr.Logger

	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	err   error // the spec's error, or the data's
	data  any
	proj  map[string]any
	dirty bool           // kubernetesResource: the objects changed since data was made
	made  time.Time      // kubernetesResource: when data was made
	bound error          // kubernetesResource: its objects are past a bound (no data until they are not)
	list  func() []any   // kubernetesResource: its informer's objects
	sizes map[string]int // kubernetesResource: each object's JSON size, by key
	total int64
	// refreshed is when an apiCall entry's call last succeeded.
	refreshed time.Time
}

// globalStale: a kubernetesResource entry's data is made again at most
// once in this time, however often its objects change (reads in between
// see the data made before).
const globalStale = time.Second

// gctxSpec is the part of a GlobalContextEntry read here.
type gctxSpec struct {
	KubernetesResource *struct {
		Group     string `json:"group"`
		Version   string `json:"version"`
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
	} `json:"kubernetesResource"`
	APICall *struct {
		URLPath string `json:"urlPath"`
		Method  string `json:"method"`
		Data    []struct {
			Key   string          `json:"key"`
			Value json.RawMessage `json:"value"`
		} `json:"data"`
		Service *struct {
			URL      string `json:"url"`
			CABundle string `json:"caBundle"`
			Headers  []struct {
				Key   string `json:"key"`
				Value string `json:"value"`
			} `json:"headers"`
		} `json:"service"`
		RefreshInterval string `json:"refreshInterval"`
		RetryLimit      int    `json:"retryLimit"`
	} `json:"apiCall"`
	Projections []struct {
		Name     string `json:"name"`
		JMESPath string `json:"jmesPath"`
	} `json:"projections"`
}

// newEntry reads an entry's spec; its err says what is wrong with it.
func (g *Globals) newEntry(u *unstructured.Unstructured) *gentry {
	e := &gentry{name: u.GetName(), generation: u.GetGeneration(), maxObjects: g.MaxObjects, maxBytes: g.MaxBytes, log: g.Log.WithValues("globalContextEntry", u.GetName())}
	if e.maxObjects <= 0 {
		e.maxObjects = DefaultGlobalMaxObjects
	}
	if e.maxBytes <= 0 {
		e.maxBytes = DefaultGlobalMaxBytes
	}
	var spec gctxSpec
	raw, err := json.Marshal(u.Object["spec"])
	if err == nil {
		err = json.Unmarshal(raw, &spec)
	}
	if err != nil {
		e.err = fmt.Errorf("GlobalContextEntry %s: spec: %v", e.name, err)
		return e
	}
	fail := func(format string, args ...any) *gentry {
		e.err = fmt.Errorf("GlobalContextEntry %s: "+format, append([]any{e.name}, args...)...)
		return e
	}
	for i, p := range spec.Projections {
		switch {
		case p.Name == "":
			return fail("spec.projections[%d].name: a projection needs a name", i)
		case p.Name == e.name:
			return fail("spec.projections[%d].name: a projection's name must differ from the entry's", i)
		}
		prog, ds := jmespath.Language{}.CompileExpr(&lang.Env{Name: "projection"}, p.JMESPath)
		if ds != nil {
			return fail("spec.projections[%d].jmesPath: %s", i, ds[0].Msg)
		}
		e.projections = append(e.projections, jmespath.Projection{Name: p.Name, Prog: prog})
	}
	switch k, a := spec.KubernetesResource, spec.APICall; {
	case (k == nil) == (a == nil):
		return fail("spec: exactly one of kubernetesResource and apiCall")
	case k != nil:
		if k.Version == "" || k.Resource == "" || (k.Group == "" && k.Version != "v1") {
			return fail("spec.kubernetesResource: a group (none for the core v1), a version and a resource")
		}
		if k.Group == "" && k.Resource == "secrets" && (k.Namespace == "" || k.Namespace == g.Protected) {
			return fail("spec.kubernetesResource: Secrets are not kept across namespaces nor from the operator's namespace (docs/security.md)")
		}
		e.resource = &schema.GroupVersionResource{Group: k.Group, Version: k.Version, Resource: k.Resource}
		e.namespace = k.Namespace
	default:
		e.refresh, e.retries = DefaultGlobalRefresh, a.RetryLimit
		if e.retries <= 0 {
			e.retries = defaultGlobalRetries
		}
		if a.RefreshInterval != "" {
			d, err := time.ParseDuration(a.RefreshInterval)
			if err != nil || d <= 0 {
				return fail("spec.apiCall.refreshInterval: %q is not a positive duration", a.RefreshInterval)
			}
			e.refresh = max(d, MinGlobalRefresh)
		}
		method := strings.ToUpper(a.Method)
		if method == "" {
			method = "GET"
		}
		if len(a.Data) > 0 && method != "POST" {
			return fail("spec.apiCall.method: a call with data is a POST")
		}
		var body []byte
		if len(a.Data) > 0 {
			m := map[string]any{}
			for _, d := range a.Data {
				v, err := value.Decode(d.Value)
				if err != nil {
					return fail("spec.apiCall.data %s: %v", d.Key, err)
				}
				m[d.Key] = v
			}
			body, _ = value.Encode(m)
		}
		switch {
		case (a.URLPath == "") == (a.Service == nil):
			return fail("spec.apiCall: exactly one of urlPath and service")
		case a.Service != nil:
			r := &engine.HTTPRequest{Method: method, URL: a.Service.URL, Body: body, CABundle: []byte(a.Service.CABundle)}
			for _, h := range a.Service.Headers {
				if r.Header == nil {
					r.Header = map[string]string{}
				}
				r.Header[h.Key] = h.Value
			}
			e.service = r
		default:
			e.call = &engine.APICall{Method: method, Path: a.URLPath, Data: body}
		}
	}
	return e
}

// start keeps the entry's data: an informer of its objects, or its call
// at every refresh.
func (e *gentry) start(ctx context.Context, g *Globals) {
	ctx, e.cancel = context.WithCancel(ctx)
	e.done = make(chan struct{})
	e.mu.Lock()
	e.err = fmt.Errorf("GlobalContextEntry %s: no data yet", e.name)
	e.mu.Unlock()
	if e.resource != nil {
		inf := dynamicinformer.NewFilteredDynamicInformer(g.Client, *e.resource, e.namespace, 0, cache.Indexers{}, nil).Informer()
		_ = inf.SetTransform(func(o any) (any, error) {
			if u, ok := o.(*unstructured.Unstructured); ok {
				u.SetManagedFields(nil)
			}
			return o, nil
		})
		e.sizes = map[string]int{}
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { e.changed(o, false) },
			UpdateFunc: func(_, o any) { e.changed(o, false) },
			DeleteFunc: func(o any) { e.changed(o, true) },
		})
		store := inf.GetStore()
		e.list = func() []any {
			objs := store.List()
			out := make([]any, 0, len(objs))
			for _, o := range objs {
				if u, ok := o.(*unstructured.Unstructured); ok {
					out = append(out, u.Object)
				}
			}
			return out
		}
		// Before the first list, an error is the entry's (forbidden: the
		// operator may not read the resource); after it, the informer
		// lists again and the data stays as last seen.
		_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
			if inf.HasSynced() {
				e.log.Info("GlobalContextEntry watch interrupted; listing again", "resource", e.resource.String(), "error", err.Error())
				return
			}
			e.mu.Lock()
			e.err = fmt.Errorf("GlobalContextEntry %s: listing %s: %v", e.name, e.resource.String(), err)
			e.mu.Unlock()
		})
		go func() {
			defer close(e.done)
			go inf.Run(ctx.Done())
			if cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				e.mu.Lock()
				e.err, e.dirty = nil, true
				e.mu.Unlock()
			}
			<-ctx.Done()
		}()
		return
	}
	go func() {
		defer close(e.done)
		retry := g.retry
		if retry <= 0 {
			retry = 2 * time.Second
		}
		for {
			var err error
			for attempt := 0; attempt < e.retries; attempt++ {
				if err = e.call1(ctx, g); err == nil || ctx.Err() != nil {
					break
				}
				select {
				case <-ctx.Done():
				case <-time.After(retry):
				}
			}
			if err != nil && ctx.Err() == nil {
				e.log.Error(err, "GlobalContextEntry call failed")
				e.mu.Lock()
				e.err, e.data, e.proj = err, nil, nil
				e.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(e.refresh):
			}
		}
	}()
}

// call1 makes the entry's call once and keeps its answer.
func (e *gentry) call1(ctx context.Context, g *Globals) error {
	var body []byte
	switch {
	case e.call != nil && g.API != nil:
		b, err := g.API.Call(ctx, *e.call)
		if err != nil {
			return fmt.Errorf("GlobalContextEntry %s: %s %s: %w", e.name, e.call.Method, e.call.Path, err)
		}
		body = b
	case e.service != nil && g.HTTP != nil:
		r, err := g.HTTP.Fetch(ctx, *e.service)
		if err != nil {
			return fmt.Errorf("GlobalContextEntry %s: %s %s: %w", e.name, e.service.Method, e.service.URL, err)
		}
		if r.Status < 200 || r.Status > 299 {
			return fmt.Errorf("GlobalContextEntry %s: %s %s: HTTP %d", e.name, e.service.Method, e.service.URL, r.Status)
		}
		body = r.Body
	default:
		return fmt.Errorf("GlobalContextEntry %s: the operator makes no such call", e.name)
	}
	if int64(len(body)) > e.maxBytes {
		return fmt.Errorf("GlobalContextEntry %s: the answer has %d bytes, more than the bound %d", e.name, len(body), e.maxBytes)
	}
	data, err := value.Decode(body)
	if err != nil {
		return fmt.Errorf("GlobalContextEntry %s: the answer is not JSON: %v", e.name, err)
	}
	proj, err := e.project(ctx, data)
	e.mu.Lock()
	e.data, e.proj, e.err = data, proj, err
	if err == nil {
		e.refreshed = time.Now()
	}
	e.mu.Unlock()
	return nil
}

// changed keeps an object's size and marks the data to be made again.
func (e *gentry) changed(o any, deleted bool) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return
	}
	key := u.GetNamespace() + "/" + u.GetName()
	size := 0
	if !deleted {
		b, _ := value.AppendJSON(nil, u.Object)
		size = len(b)
	}
	e.mu.Lock()
	e.total += int64(size - e.sizes[key])
	if deleted {
		delete(e.sizes, key)
	} else {
		e.sizes[key] = size
	}
	e.dirty = true
	e.mu.Unlock()
}

// get is the data (projection "") or a projection, made again first when
// the objects changed.
func (e *gentry) get(projection string) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil && e.dirty && e.list != nil && (e.data == nil || time.Since(e.made) >= globalStale) {
		e.dirty, e.made = false, time.Now()
		switch {
		case len(e.sizes) > e.maxObjects:
			e.data, e.proj = nil, nil
			e.bound = fmt.Errorf("GlobalContextEntry %s: %s holds %d objects, more than the bound %d", e.name, e.resource.String(), len(e.sizes), e.maxObjects)
		case e.total > e.maxBytes:
			e.data, e.proj = nil, nil
			e.bound = fmt.Errorf("GlobalContextEntry %s: %s holds %d bytes, more than the bound %d", e.name, e.resource.String(), e.total, e.maxBytes)
		default:
			data := e.list()
			proj, err := e.project(context.Background(), data)
			if err != nil {
				e.dirty = true // made again at the next read
				return nil, err
			}
			e.data, e.proj, e.bound = data, proj, nil
		}
	}
	if e.err == nil && e.bound != nil {
		return nil, e.bound
	}
	if e.err != nil {
		return nil, e.err
	}
	if projection == "" {
		return e.data, nil
	}
	v, ok := e.proj[projection]
	if !ok || v == nil {
		return nil, fmt.Errorf("GlobalContextEntry %s: no data for projection %q", e.name, projection)
	}
	return v, nil
}

// project computes the projections of data.
func (e *gentry) project(ctx context.Context, data any) (map[string]any, error) {
	if len(e.projections) == 0 {
		return nil, nil
	}
	out, err := jmespath.Project(ctx, data, e.projections)
	if err != nil {
		return nil, fmt.Errorf("GlobalContextEntry %s: %w", e.name, err)
	}
	return out, nil
}

// stop ends the entry's informer or calls and waits for them.
func (e *gentry) stop() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	<-e.done
}

// GlobalState is an entry's state as its status says it: whether its data
// is there (else the error), and when an apiCall entry last refreshed.
type GlobalState struct {
	Generation int64
	Err        error
	Refreshed  time.Time
}

// States are the entries' states by name, and the served resource (empty
// before it is known).
func (g *Globals) States() (schema.GroupVersionResource, map[string]GlobalState) {
	g.mu.RLock()
	entries := make([]*gentry, 0, len(g.entries))
	for _, e := range g.entries {
		entries = append(entries, e)
	}
	gvr := g.gvr
	g.mu.RUnlock()
	out := make(map[string]GlobalState, len(entries))
	for _, e := range entries {
		_, err := e.get("") // makes a changed resource's data again
		e.mu.Lock()
		out[e.name] = GlobalState{Generation: e.generation, Err: err, Refreshed: e.refreshed}
		e.mu.Unlock()
	}
	return gvr, out
}
