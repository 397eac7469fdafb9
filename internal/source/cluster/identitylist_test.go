package cluster_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/modwright/modwright/internal/pages"
	"github.com/modwright/modwright/internal/source/cluster"
)

// pagedPods lists n Pods in pages as the API server does (limit,
// continue), and records each request and how many objects the slimming
// had seen when it came.
type pagedPods struct {
	n         int
	limits    []int64
	slimmedAt []int
	slimmed   *int
}

func (p *pagedPods) ListPage(_ context.Context, _ schema.GroupVersionResource, _ string, limit int64, cont string) (pages.Page, error) {
	p.limits = append(p.limits, limit)
	p.slimmedAt = append(p.slimmedAt, *p.slimmed)
	from, _ := strconv.Atoi(cont)
	l := pages.Page{ResourceVersion: fmt.Sprint(100 + len(p.limits))} // only the first page's counts
	for i := from; i < min(from+int(limit), p.n); i++ {
		l.Items = append(l.Items, map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": fmt.Sprintf("p%04d", i)},
			"spec": map[string]any{"big": "x"}})
	}
	if from+int(limit) < p.n {
		l.Continue = strconv.Itoa(from + int(limit))
	}
	return l, nil
}

// TestIdentityListWatch: the list is read page by page (a consistent
// read, never the watch cache's whole answer to the reflector's
// resourceVersion 0), each page's objects taken before the next is read,
// and the identities returned at the first page's resourceVersion.
func TestIdentityListWatch(t *testing.T) {
	const n = 2*cluster.ListPageSize + 7
	slimmed := 0
	pods := &pagedPods{n: n, slimmed: &slimmed}
	lw := cluster.IdentityListWatch(pods, nil, schema.GroupVersionResource{Version: "v1", Resource: "pods"}, func(obj map[string]any) *metav1.PartialObjectMetadata {
		slimmed++
		u := unstructured.Unstructured{Object: obj}
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: u.GetName()}}
	})
	out, err := lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	l := out.(*metav1.PartialObjectMetadataList)
	if len(l.Items) != n || l.ResourceVersion != "101" || l.Continue != "" {
		t.Fatalf("%d items at %q (continue %q), want %d at 101", len(l.Items), l.ResourceVersion, l.Continue, n)
	}
	if l.Items[n-1].Name != fmt.Sprintf("p%04d", n-1) || slimmed != n {
		t.Errorf("last item %v, %d taken", l.Items[n-1], slimmed)
	}
	if len(pods.limits) != 3 {
		t.Fatalf("%d list requests, want 3 pages", len(pods.limits))
	}
	for i, limit := range pods.limits {
		if limit != cluster.ListPageSize {
			t.Errorf("request %d: limit %d, want %d", i, limit, cluster.ListPageSize)
		}
		if pods.slimmedAt[i] != i*cluster.ListPageSize {
			t.Errorf("request %d came after %d objects were slimmed, want %d", i, pods.slimmedAt[i], i*cluster.ListPageSize)
		}
	}
}
