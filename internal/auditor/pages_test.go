package auditor_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/modwright/modwright/internal/audit"
	"github.com/modwright/modwright/internal/auditor"
	"github.com/modwright/modwright/internal/pages"
	"github.com/modwright/modwright/internal/pages/pagestest"
)

// rawPages is pages.Raw over pagestest's server, and the requests it
// receives.
func rawPages(t *testing.T) (pages.Raw, *[]string) {
	t.Helper()
	requests := new([]string)
	raw, err := pages.NewRaw(&rest.Config{Host: pagestest.Server(t, requests).URL})
	if err != nil {
		t.Fatal(err)
	}
	return raw, requests
}

// TestScanRawPages: a scan through pages.Raw gives the results a scan
// through the dynamic client gives (TestScan).
func TestScanRawPages(t *testing.T) {
	pages, _ := rawPages(t)
	dyn, disc := fakeClients()
	st := &store{p: snapshot(t, policy)}
	mem := &auditor.MemoryStore{}
	a := auditor.New(auditor.Options{Snapshots: st, Client: dyn, Pages: scopedPages{pages, "a"}, Discovery: disc, Store: mem, Log: logr.Discard(), PageSize: 2,
		Now: func() time.Time { return time.Unix(1000, 0) }})
	if err := a.Scan(context.Background(), st.p); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	mem.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, auditor.MemoryPath+"?namespace=a", nil))
	var list struct {
		Items []struct {
			Summary map[string]int `json:"summary"`
		} `json:"items"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || len(list.Items) != 1 {
		t.Fatalf("%v: %s", err, rec.Body.String())
	}
	if s := list.Items[0].Summary; s["fail"] != 2 || s["pass"] != 1 {
		t.Errorf("summary %v, want fail 2 (bad, worse) and pass 1 (good)", s)
	}
}

// scopedPages lists namespace ns whatever the scan asks (the test's server
// serves only a's Pods).
type scopedPages struct {
	pages.Lister
	ns string
}

func (s scopedPages) ListPage(ctx context.Context, gvr schema.GroupVersionResource, _ string, limit int64, cont string) (pages.Page, error) {
	if gvr != pods {
		return pages.Page{}, nil
	}
	return s.Lister.ListPage(ctx, gvr, s.ns, limit, cont)
}

// largePages serves n Pods of namespace a, one page of limit objects at a
// time, refusing a page of more than fit objects as too large (objects a
// tenant made large); limits records the limits asked.
type largePages struct {
	n, fit int
	limits []int64
}

func (l *largePages) ListPage(_ context.Context, gvr schema.GroupVersionResource, _ string, limit int64, cont string) (pages.Page, error) {
	l.limits = append(l.limits, limit)
	if gvr != pods {
		return pages.Page{}, nil
	}
	if limit > int64(l.fit) {
		return pages.Page{}, pages.ErrTooLarge
	}
	from := 0
	if cont != "" {
		from, _ = strconv.Atoi(cont)
	}
	p := pages.Page{ResourceVersion: "7"}
	for i := from; i < l.n && i < from+int(limit); i++ {
		p.Items = append(p.Items, map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p" + strconv.Itoa(i), "namespace": "a"}, "spec": map[string]any{}})
	}
	if next := from + int(limit); next < l.n {
		p.Continue = strconv.Itoa(next)
	}
	return p, nil
}

// TestScanLargePages: a page over the bound is asked again with fewer
// objects, down to one, and every object is scanned; the resource is not
// left out.
func TestScanLargePages(t *testing.T) {
	dyn, disc := fakeClients()
	st := &store{p: snapshot(t, policy)}
	lp := &largePages{n: 5, fit: 1}
	a := auditor.New(auditor.Options{Snapshots: st, Client: dyn, Pages: lp, Discovery: disc, Store: &auditor.MemoryStore{}, Log: logr.Discard(), PageSize: 4})
	w, err := a.Walk(context.Background(), st.p, func([]audit.Result) {})
	if err != nil {
		t.Fatal(err)
	}
	if w.Objects != 5 || len(w.Unlisted) != 0 {
		t.Errorf("scanned %d objects (want 5), unlisted %v", w.Objects, w.Unlisted)
	}
	if d := cmp.Diff([]int64{4, 2, 1, 1, 1, 1, 1}, lp.limits); d != "" {
		t.Errorf("limits asked (-want +got):\n%s", d)
	}
}

// aheadPages serves n Pods of namespace a, one a page, and signals each
// request.
type aheadPages struct {
	n     int
	mu    sync.Mutex
	calls int
	asked chan int // the request's number, from 1
}

func (l *aheadPages) ListPage(_ context.Context, gvr schema.GroupVersionResource, _ string, _ int64, cont string) (pages.Page, error) {
	if gvr != pods {
		return pages.Page{}, nil
	}
	l.mu.Lock()
	l.calls++
	calls := l.calls
	l.mu.Unlock()
	select {
	case l.asked <- calls:
	default:
	}
	i, _ := strconv.Atoi(cont)
	p := pages.Page{ResourceVersion: "7", Items: []map[string]any{{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p" + strconv.Itoa(i), "namespace": "a"}, "spec": map[string]any{}}}}
	if i+1 < l.n {
		p.Continue = strconv.Itoa(i + 1)
	}
	return p, nil
}

func (l *aheadPages) requests() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// TestScanReadsAhead: the next page is asked for while the page before is
// evaluated, and only the next one (two pages in memory at most); a walk
// that ends early stops its reader before it returns.
func TestScanReadsAhead(t *testing.T) {
	dyn, disc := fakeClients()
	st := &store{p: snapshot(t, policy)}
	lp := &aheadPages{n: 5, asked: make(chan int, 8)}
	a := auditor.New(auditor.Options{Snapshots: st, Client: dyn, Pages: lp, Discovery: disc, Store: &auditor.MemoryStore{}, Log: logr.Discard(), PageSize: 1})
	evaluated := 0
	w, err := a.Walk(context.Background(), st.p, func([]audit.Result) {
		evaluated++
		if evaluated != 1 {
			return
		}
		// The first page's object: the second page is asked for now.
		deadline := time.After(10 * time.Second)
		for asked := 0; asked < 2; {
			select {
			case asked = <-lp.asked:
			case <-deadline:
				t.Fatal("the second page was not asked for while the first was evaluated")
			}
		}
		time.Sleep(20 * time.Millisecond)
		if n := lp.requests(); n != 2 {
			t.Errorf("%d pages asked for while the first was evaluated, want 2", n)
		}
	})
	if err != nil || w.Objects != 5 || evaluated != 5 {
		t.Fatalf("walk: %+v, %d evaluated, %v; want 5 objects", w, evaluated, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	lp = &aheadPages{n: 1000, asked: make(chan int, 8)}
	a = auditor.New(auditor.Options{Snapshots: st, Client: dyn, Pages: lp, Discovery: disc, Store: &auditor.MemoryStore{}, Log: logr.Discard(), PageSize: 1})
	evaluated = 0
	_, err = a.Walk(ctx, st.p, func([]audit.Result) {
		if evaluated++; evaluated == 3 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("walk ended early: %v, want context.Canceled", err)
	}
	after := lp.requests()
	time.Sleep(20 * time.Millisecond)
	if n := lp.requests(); n != after || n > 5 {
		t.Errorf("pages asked for: %d when the walk returned, %d after (want no more, and at most 5)", after, n)
	}
}
