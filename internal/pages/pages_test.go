package pages_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/modwright/modwright/internal/pages"
	"github.com/modwright/modwright/internal/pages/pagestest"
)

var pods = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// TestRaw: pages are read as the API server gives them, the items
// of a built-in kind's list given their apiVersion and kind, numbers as the
// engine's json.Number; the path names the group and namespace; a page
// over the bound, and a refused list, are errors.
func TestRaw(t *testing.T) {
	requests := new([]string)
	raw, err := pages.NewRaw(&rest.Config{Host: pagestest.Server(t, requests).URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := raw.ListPage(ctx, pods, "a", 2, "")
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
	if p, err = raw.ListPage(ctx, pods, "a", 2, "next"); err != nil || len(p.Items) != 1 || p.Continue != "" {
		t.Fatalf("second page: %+v, %v", p, err)
	}
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	if p, err = raw.ListPage(ctx, deployments, "", 2, ""); err != nil || len(p.Items) != 1 {
		t.Fatalf("deployments: %+v, %v", p, err)
	}
	want := []string{"/api/v1/namespaces/a/pods?limit=2", "/api/v1/namespaces/a/pods?continue=next&limit=2", "/apis/apps/v1/deployments?limit=2"}
	if d := cmp.Diff(want, *requests); d != "" {
		t.Errorf("requests (-want +got):\n%s", d)
	}
	small := raw
	small.MaxBytes = 1024
	if _, err := small.ListPage(ctx, deployments, "", 2, ""); !errors.Is(err, pages.ErrTooLarge) {
		t.Errorf("a 4 KB page over a 1 KB bound: %v, want ErrTooLarge", err)
	}
	if _, err := raw.ListPage(ctx, pods, "b", 2, ""); !apierrors.IsForbidden(err) {
		t.Errorf("a refused list: %v, want the API server's Forbidden", err)
	}
}

// tooLarge serves n objects, a page of limit objects at a time, refusing
// pages of more than fit objects as too large.
type tooLarge struct {
	n, fit int
	limits []int64
}

func (l *tooLarge) ListPage(_ context.Context, _ schema.GroupVersionResource, _ string, limit int64, cont string) (pages.Page, error) {
	l.limits = append(l.limits, limit)
	if limit > int64(l.fit) {
		return pages.Page{}, pages.ErrTooLarge
	}
	from, _ := strconv.Atoi(cont)
	p := pages.Page{ResourceVersion: "7"}
	for i := from; i < l.n && i < from+int(limit); i++ {
		p.Items = append(p.Items, map[string]any{"name": strconv.Itoa(i)})
	}
	if next := from + int(limit); next < l.n {
		p.Continue = strconv.Itoa(next)
	}
	return p, nil
}

// TestPager: every page in turn, then no more; a page over the bound is
// asked for again with half the objects, down to one, which the pages
// after it keep; an error ends the walk.
func TestPager(t *testing.T) {
	l := &tooLarge{n: 5, fit: 2}
	p := &pages.Pager{Lister: l, GVR: pods, Limit: 8}
	var got []string
	for {
		page, ok, err := p.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		for _, it := range page.Items {
			got = append(got, it["name"].(string))
		}
	}
	if d := cmp.Diff([]string{"0", "1", "2", "3", "4"}, got); d != "" {
		t.Errorf("objects (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int64{8, 4, 2, 2, 2}, l.limits); d != "" {
		t.Errorf("limits asked (-want +got):\n%s", d)
	}
	if p.Requests != 5 {
		t.Errorf("%d requests counted, want 5", p.Requests)
	}
	if _, ok, err := p.Next(context.Background()); ok || err != nil {
		t.Errorf("after the last page: %v, %v; want none", ok, err)
	}

	p = &pages.Pager{Lister: &tooLarge{n: 5, fit: 0}, GVR: pods, Limit: 4}
	if _, ok, err := p.Next(context.Background()); ok || !errors.Is(err, pages.ErrTooLarge) {
		t.Errorf("no page fits: %v, %v; want ErrTooLarge", ok, err)
	}
	if p.Requests != 3 {
		t.Errorf("%d requests (limits 4, 2, 1), want 3", p.Requests)
	}
	if _, ok, err := p.Next(context.Background()); ok || err != nil {
		t.Errorf("after an error: %v, %v; want the walk over", ok, err)
	}
}
