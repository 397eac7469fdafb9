package auditor

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/modwright/modwright/internal/audit"
)

// Report resources.
var (
	policyReports        = schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"}
	clusterPolicyReports = schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "clusterpolicyreports"}
)

// managedBy selects the reports modwright writes.
const managedBy = "app.kubernetes.io/managed-by=modwright"

// CRDStore writes the reports as wgpolicyk8s.io objects (their CRDs must
// be installed: Kyverno's, Policy Reporter's or the chart's). It reads back
// only the reports' metadata: a report carries the hash of what it says
// (AnnotationContent), so an unchanged report is neither decoded nor
// written.
type CRDStore struct {
	Client dynamic.Interface
	// Metadata reads the reports' metadata (names, resource versions,
	// content hashes): MetadataClient in the cluster.
	Metadata Metadata
	Metrics  *Metrics // nil: none
	// Writers is how many reports are built and written at once (<= 0:
	// DefaultWriters): an API server with cores to spare (or several
	// replicas) validates them side by side, each about half a megabyte at
	// the cap. (On a 2-core machine shared with the API server, measured:
	// no faster than one at a time, BENCHMARKS.md.)
	Writers int
}

// DefaultWriters is CRDStore's default number of reports written at once:
// each one being written holds its report's object (a few megabytes at the
// cap) in memory.
const DefaultWriters = 3

// Metadata reads objects' metadata without their content.
type Metadata interface {
	GetMeta(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (metav1.Object, error)
	ListMeta(ctx context.Context, gvr schema.GroupVersionResource, selector string) ([]metav1.Object, error)
}

// MetadataClient is Metadata through client-go's metadata client.
type MetadataClient struct{ Client metadata.Interface }

var _ Metadata = MetadataClient{}

// GetMeta reads one object's metadata.
func (m MetadataClient) GetMeta(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (metav1.Object, error) {
	return m.Client.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

// ListMeta lists the metadata of the objects the label selector selects,
// in every namespace.
func (m MetadataClient) ListMeta(ctx context.Context, gvr schema.GroupVersionResource, selector string) ([]metav1.Object, error) {
	list, err := m.Client.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// AnnotationContent is the hash of what a report says: its summary, its
// results without their timestamps, its labels and other annotations.
const AnnotationContent = "modwright.io/content-hash"

var _ Store = (*CRDStore)(nil)

// Write creates or updates each report whose content changed, building
// at most Writers at a time, and deletes modwright's reports that are not
// among them.
func (s *CRDStore) Write(ctx context.Context, rp *audit.Report, now time.Time) error {
	nss := rp.Namespaces()
	keep := make(map[string]bool, len(nss))
	for _, ns := range nss {
		keep[ns+"/"+audit.ReportName] = true
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cmp.Or(max(s.Writers, 0), DefaultWriters))
	for _, ns := range nss {
		g.Go(func() error {
			return s.put(gctx, &unstructured.Unstructured{Object: rp.Object(ns, now)})
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, gvr := range []schema.GroupVersionResource{policyReports, clusterPolicyReports} {
		olds, err := s.Metadata.ListMeta(ctx, gvr, managedBy)
		if err != nil {
			return err
		}
		for _, old := range olds {
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
	hash := contentHash(u.Object)
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationContent] = hash
	u.SetAnnotations(ann)
	old, err := s.Metadata.GetMeta(ctx, gvr, u.GetNamespace(), u.GetName())
	rc := s.Client.Resource(gvr).Namespace(u.GetNamespace())
	switch {
	case apierrors.IsNotFound(err):
		_, err = rc.Create(ctx, u, metav1.CreateOptions{})
		if err == nil {
			s.Metrics.wrote("create")
		}
		return err
	case err != nil:
		return err
	case old.GetAnnotations()[AnnotationContent] == hash:
		return nil
	}
	u.SetResourceVersion(old.GetResourceVersion())
	_, err = rc.Update(ctx, u, metav1.UpdateOptions{})
	if err == nil {
		s.Metrics.wrote("update")
	}
	return err
}

// contentHash hashes what a report says: its summary, its results without
// their timestamps, its labels and annotations (the hash's own aside).
func contentHash(r map[string]any) string {
	md, _ := r["metadata"].(map[string]any)
	ann := map[string]any{}
	if a, ok := md["annotations"].(map[string]any); ok {
		for k, v := range a {
			if k != AnnotationContent {
				ann[k] = v
			}
		}
	}
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
	h := sha256.New()
	_ = json.NewEncoder(h).Encode([]any{md["labels"], ann, r["summary"], results}) // map keys sorted
	return hex.EncodeToString(h.Sum(nil))
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

// Write keeps the reports.
func (s *MemoryStore) Write(_ context.Context, rp *audit.Report, now time.Time) error {
	reports := rp.Objects(now)
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
