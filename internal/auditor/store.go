package auditor

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Report resources.
var (
	policyReports        = schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"}
	clusterPolicyReports = schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "clusterpolicyreports"}
)

// managedBy selects the reports modwright writes.
const managedBy = "app.kubernetes.io/managed-by=modwright"

// CRDStore writes the reports as wgpolicyk8s.io objects (their CRDs must
// be installed: Kyverno's, Policy Reporter's or the chart's).
type CRDStore struct {
	Client  dynamic.Interface
	Metrics *Metrics // nil: none
}

var _ Store = (*CRDStore)(nil)

// Write creates or updates each report whose content changed (its results'
// timestamps aside) and deletes modwright's reports that are not among
// them.
func (s *CRDStore) Write(ctx context.Context, reports []map[string]any) error {
	keep := map[string]bool{}
	for _, r := range reports {
		u := &unstructured.Unstructured{Object: r}
		keep[u.GetNamespace()+"/"+u.GetName()] = true
		if err := s.put(ctx, u); err != nil {
			return err
		}
	}
	for _, gvr := range []schema.GroupVersionResource{policyReports, clusterPolicyReports} {
		list, err := s.Client.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: managedBy})
		if err != nil {
			return err
		}
		for _, old := range list.Items {
			if keep[old.GetNamespace()+"/"+old.GetName()] {
				continue
			}
			err := s.Client.Resource(gvr).Namespace(old.GetNamespace()).Delete(ctx, old.GetName(), metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			s.Metrics.wrote("delete")
		}
	}
	return nil
}

func (s *CRDStore) put(ctx context.Context, u *unstructured.Unstructured) error {
	gvr := policyReports
	if u.GetNamespace() == "" {
		gvr = clusterPolicyReports
	}
	rc := s.Client.Resource(gvr).Namespace(u.GetNamespace())
	old, err := rc.Get(ctx, u.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = rc.Create(ctx, u, metav1.CreateOptions{})
		if err == nil {
			s.Metrics.wrote("create")
		}
		return err
	case err != nil:
		return err
	}
	if sameReport(old.Object, u.Object) {
		return nil
	}
	u.SetResourceVersion(old.GetResourceVersion())
	_, err = rc.Update(ctx, u, metav1.UpdateOptions{})
	if err == nil {
		s.Metrics.wrote("update")
	}
	return err
}

// sameReport compares what a report says: its summary, its results
// without their timestamps, its labels and annotations.
func sameReport(a, b map[string]any) bool {
	return reflect.DeepEqual(content(a), content(b))
}

func content(r map[string]any) any {
	md, _ := r["metadata"].(map[string]any)
	var results []any
	if rs, ok := r["results"].([]any); ok {
		for _, x := range rs {
			m, _ := x.(map[string]any)
			c := make(map[string]any, len(m))
			for k, v := range m {
				if k != "timestamp" {
					c[k] = v
				}
			}
			results = append(results, c)
		}
	}
	// The API server returns numbers as int64; the report builds ints.
	b, _ := json.Marshal([]any{md["labels"], md["annotations"], r["summary"], results})
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// MemoryStore keeps the last reports in memory, out of etcd, and serves
// them (ServeHTTP) as a List.
type MemoryStore struct {
	p atomic.Pointer[[]map[string]any]
}

var (
	_ Store        = (*MemoryStore)(nil)
	_ http.Handler = (*MemoryStore)(nil)
)

// MemoryPath is where the operator serves a MemoryStore (on its metrics
// port).
const MemoryPath = "/api/v1alpha1/policyreports"

// Write keeps reports.
func (s *MemoryStore) Write(_ context.Context, reports []map[string]any) error {
	s.p.Store(&reports)
	return nil
}

// ServeHTTP answers GET with the reports (a v1 List; ?namespace=NS: that
// namespace's report only).
func (s *MemoryStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	items := []any{}
	if p := s.p.Load(); p != nil {
		ns, filter := r.URL.Query()["namespace"]
		for _, rep := range *p {
			md, _ := rep["metadata"].(map[string]any)
			if got, _ := md["namespace"].(string); filter && got != ns[0] {
				continue
			}
			items = append(items, rep)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
}
