package cluster_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/modwright/modwright/internal/source/cluster"
)

// pagedPods lists n Pods in pages as the API server does (Limit,
// Continue), and records each request and how many objects the slimming
// had seen when it came.
type pagedPods struct {
	dynamic.ResourceInterface // only List is used
	n                         int
	requests                  []metav1.ListOptions
	slimmedAt                 []int
	slimmed                   *int
}

func (p *pagedPods) List(_ context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	p.requests = append(p.requests, opts)
	p.slimmedAt = append(p.slimmedAt, *p.slimmed)
	from, _ := strconv.Atoi(opts.Continue)
	l := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "PodList"}}
	l.SetResourceVersion(fmt.Sprint(100 + len(p.requests))) // only the first page's counts
	for i := from; i < min(from+int(opts.Limit), p.n); i++ {
		pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "spec": map[string]any{"big": "x"}}}
		pod.SetName(fmt.Sprintf("p%04d", i))
		l.Items = append(l.Items, *pod)
	}
	if from+int(opts.Limit) < p.n {
		l.SetContinue(strconv.Itoa(from + int(opts.Limit)))
	}
	return l, nil
}

// TestIdentityListWatch: the list is read page by page from etcd (never
// the watch cache's whole answer to resourceVersion 0), each page's
// objects taken before the next is read, and the identities returned at
// the first page's resourceVersion.
func TestIdentityListWatch(t *testing.T) {
	const n = 2*cluster.ListPageSize + 7
	slimmed := 0
	pods := &pagedPods{n: n, slimmed: &slimmed}
	lw := cluster.IdentityListWatch(pods, func(u *unstructured.Unstructured) *metav1.PartialObjectMetadata {
		slimmed++
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
	if len(pods.requests) != 3 {
		t.Fatalf("%d list requests, want 3 pages", len(pods.requests))
	}
	for i, r := range pods.requests {
		if r.ResourceVersion != "" || r.Limit != cluster.ListPageSize {
			t.Errorf("request %d: resourceVersion %q, limit %d: want a consistent read of pages", i, r.ResourceVersion, r.Limit)
		}
		if pods.slimmedAt[i] != i*cluster.ListPageSize {
			t.Errorf("request %d came after %d objects were slimmed, want %d", i, pods.slimmedAt[i], i*cluster.ListPageSize)
		}
	}
}
