package auditor_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/modwright/modwright/internal/audit"
	"github.com/modwright/modwright/internal/auditor"
)

// listServer serves PodLists of namespace a in pages of two (items
// without apiVersion and kind, as the API server writes a built-in kind's
// list), Deployments in one page, and records the requests.
func listServer(t *testing.T, requests *[]string) *httptest.Server {
	t.Helper()
	pod := func(name string, labels map[string]any) map[string]any {
		md := map[string]any{"name": name, "namespace": "a"}
		if labels != nil {
			md["labels"] = labels
		}
		return map[string]any{"metadata": md, "spec": map[string]any{"priority": 7}}
	}
	pages := map[string]map[string]any{
		"": {"apiVersion": "v1", "kind": "PodList", "metadata": map[string]any{"resourceVersion": "42", "continue": "next"},
			"items": []any{pod("good", map[string]any{"team": "x"}), pod("bad", nil)}},
		"next": {"apiVersion": "v1", "kind": "PodList", "metadata": map[string]any{"resourceVersion": "42"},
			"items": []any{pod("worse", nil)}},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*requests = append(*requests, r.URL.Path+"?"+r.URL.RawQuery)
		switch r.URL.Path {
		case "/api/v1/namespaces/a/pods":
			_ = json.NewEncoder(w).Encode(pages[r.URL.Query().Get("continue")])
		case "/apis/apps/v1/deployments":
			_, _ = w.Write([]byte(`{"apiVersion":"apps/v1","kind":"DeploymentList","metadata":{},"items":[{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"padding":"` + strings.Repeat("x", 4096) + `"}]}`))
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods is forbidden","reason":"Forbidden","code":403}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// rawPages is RawPages over listServer, and the requests it receives.
func rawPages(t *testing.T) (auditor.RawPages, *[]string) {
	t.Helper()
	requests := new([]string)
	pages, err := auditor.NewRawPages(&rest.Config{Host: listServer(t, requests).URL})
	if err != nil {
		t.Fatal(err)
	}
	return pages, requests
}

// TestRawPages: pages are read as the API server gives them, the items
// of a built-in kind's list given their apiVersion and kind, numbers as the
// engine's json.Number; the path names the group and namespace; a page
// over the bound, and a refused list, are errors.
func TestRawPages(t *testing.T) {
	pages, requests := rawPages(t)
	ctx := context.Background()
	p, err := pages.ListPage(ctx, pods, "a", 2, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 2 || p.Continue != "next" || p.ResourceVersion != "42" {
		t.Fatalf("first page: %d items, continue %q, resourceVersion %q", len(p.Items), p.Continue, p.ResourceVersion)
	}
	if p.Items[0]["apiVersion"] != "v1" || p.Items[0]["kind"] != "Pod" {
		t.Errorf("item's apiVersion %v kind %v, want v1 Pod (the list's)", p.Items[0]["apiVersion"], p.Items[0]["kind"])
	}
	if n, ok := p.Items[0]["spec"].(map[string]any)["priority"].(json.Number); !ok || n != "7" {
		t.Errorf("a number decoded as %T %v, want json.Number 7", p.Items[0]["spec"].(map[string]any)["priority"], p.Items[0]["spec"].(map[string]any)["priority"])
	}
	if p, err = pages.ListPage(ctx, pods, "a", 2, "next"); err != nil || len(p.Items) != 1 || p.Continue != "" {
		t.Fatalf("second page: %+v, %v", p, err)
	}
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	if p, err = pages.ListPage(ctx, deployments, "", 2, ""); err != nil || len(p.Items) != 1 {
		t.Fatalf("deployments: %+v, %v", p, err)
	}
	want := []string{"/api/v1/namespaces/a/pods?limit=2", "/api/v1/namespaces/a/pods?continue=next&limit=2", "/apis/apps/v1/deployments?limit=2"}
	if d := cmp.Diff(want, *requests); d != "" {
		t.Errorf("requests (-want +got):\n%s", d)
	}
	small := pages
	small.MaxBytes = 1024
	if _, err := small.ListPage(ctx, deployments, "", 2, ""); !errors.Is(err, auditor.ErrPageTooLarge) {
		t.Errorf("a 4 KB page over a 1 KB bound: %v, want ErrPageTooLarge", err)
	}
	if _, err := pages.ListPage(ctx, pods, "b", 2, ""); !apierrors.IsForbidden(err) {
		t.Errorf("a refused list: %v, want the API server's Forbidden", err)
	}
}

// TestScanRawPages: a scan through RawPages gives the results a scan
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
	auditor.PageLister
	ns string
}

func (s scopedPages) ListPage(ctx context.Context, gvr schema.GroupVersionResource, _ string, limit int64, cont string) (auditor.Page, error) {
	if gvr != pods {
		return auditor.Page{}, nil
	}
	return s.PageLister.ListPage(ctx, gvr, s.ns, limit, cont)
}

// largePages serves n Pods of namespace a, one page of limit objects at a
// time, refusing a page of more than fit objects as too large (objects a
// tenant made large); limits records the limits asked.
type largePages struct {
	n, fit int
	limits []int64
}

func (l *largePages) ListPage(_ context.Context, gvr schema.GroupVersionResource, _ string, limit int64, cont string) (auditor.Page, error) {
	l.limits = append(l.limits, limit)
	if gvr != pods {
		return auditor.Page{}, nil
	}
	if limit > int64(l.fit) {
		return auditor.Page{}, auditor.ErrPageTooLarge
	}
	from := 0
	if cont != "" {
		from, _ = strconv.Atoi(cont)
	}
	p := auditor.Page{ResourceVersion: "7"}
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
