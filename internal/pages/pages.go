package pages

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/modwright/modwright/internal/value"
)

// Page is one page of a resource's objects.
type Page struct {
	Items []map[string]any
	// Continue asks for the next page ("" after the last);
	// ResourceVersion is the list's.
	Continue, ResourceVersion string
}

// Lister lists one page of a resource's objects (in namespace, or all
// when ""), a consistent read.
type Lister interface {
	ListPage(ctx context.Context, gvr schema.GroupVersionResource, namespace string, limit int64, cont string) (Page, error)
}

// Dynamic lists pages through a dynamic client (client-go's decoding:
// numbers as int64 and float64).
type Dynamic struct{ Client dynamic.Interface }

var _ Lister = Dynamic{}

// ListPage lists one page.
func (d Dynamic) ListPage(ctx context.Context, gvr schema.GroupVersionResource, namespace string, limit int64, cont string) (Page, error) {
	list, err := d.Client.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{Limit: limit, Continue: cont})
	if err != nil {
		return Page{}, err
	}
	p := Page{Items: make([]map[string]any, len(list.Items)), Continue: list.GetContinue(), ResourceVersion: list.GetResourceVersion()}
	for i := range list.Items {
		p.Items[i] = list.Items[i].Object
	}
	return p, nil
}

// DefaultMaxBytes bounds a page's body: 200 objects at etcd's largest
// (1.5 MiB) would be 300 MiB; a page over the bound is ErrTooLarge, and a
// Pager asks for it again with fewer objects (one always fits).
const DefaultMaxBytes = 128 << 20

// ErrTooLarge is the error of a page over Raw.MaxBytes.
var ErrTooLarge = errors.New("list page too large")

// Raw lists pages through a REST client and decodes them with modwright's
// own JSON decoder (internal/value: the engine's tree, numbers as
// json.Number), two to three times as fast as client-go's reflection-based
// decoding into unstructured objects, with fewer allocations; a page's
// body is bounded by MaxBytes (<= 0: DefaultMaxBytes).
type Raw struct {
	Client   rest.Interface
	MaxBytes int64
}

var _ Lister = Raw{}

// NewRaw is Raw over a client of cfg (its rate limit included).
func NewRaw(cfg *rest.Config) (Raw, error) {
	rc, err := rest.UnversionedRESTClientFor(dynamic.ConfigFor(cfg))
	if err != nil {
		return Raw{}, err
	}
	return Raw{Client: rc}, nil
}

// ListPage lists one page.
func (r Raw) ListPage(ctx context.Context, gvr schema.GroupVersionResource, namespace string, limit int64, cont string) (Page, error) {
	max := r.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	req := r.Client.Get().AbsPath(listPath(gvr, namespace)...).Param("limit", strconv.FormatInt(limit, 10))
	if cont != "" {
		req = req.Param("continue", cont)
	}
	body, err := req.Stream(ctx)
	if err != nil {
		return Page{}, err
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, max+1))
	if err != nil {
		return Page{}, err
	}
	if int64(len(data)) > max {
		return Page{}, fmt.Errorf("%s: %w (over %d bytes)", gvr.String(), ErrTooLarge, max)
	}
	tree, err := value.Decode(data)
	if err != nil {
		return Page{}, fmt.Errorf("%s: decoding the list: %w", gvr.String(), err)
	}
	list, _ := tree.(map[string]any)
	md, _ := list["metadata"].(map[string]any)
	p := Page{}
	p.Continue, _ = md["continue"].(string)
	p.ResourceVersion, _ = md["resourceVersion"].(string)
	// The API server leaves out the items' apiVersion and kind in a list
	// of a built-in kind; client-go's decoding sets them from the list's,
	// and so does this.
	apiVersion, _ := list["apiVersion"].(string)
	listKind, _ := list["kind"].(string)
	kind := strings.TrimSuffix(listKind, "List")
	items, _ := list["items"].([]any)
	p.Items = make([]map[string]any, 0, len(items))
	for _, it := range items {
		obj, ok := it.(map[string]any)
		if !ok {
			continue
		}
		if _, ok := obj["apiVersion"]; !ok && apiVersion != "" {
			obj["apiVersion"] = apiVersion
		}
		if _, ok := obj["kind"]; !ok && kind != "" && kind != listKind {
			obj["kind"] = kind
		}
		p.Items = append(p.Items, obj)
	}
	return p, nil
}

// listPath is the path of a resource's list (/api/v1/... for the core
// group, /apis/GROUP/VERSION/... otherwise).
func listPath(gvr schema.GroupVersionResource, namespace string) []string {
	p := []string{"/apis", gvr.Group, gvr.Version}
	if gvr.Group == "" {
		p = []string{"/api", gvr.Version}
	}
	if namespace != "" {
		p = append(p, "namespaces", namespace)
	}
	return append(p, gvr.Resource)
}

// Pager walks the pages of one resource (in Namespace, or all when "").
// A page over the lister's bound (large objects, which any tenant may
// write) is asked for again with half the objects, down to one, rather
// than the resource left unlisted; the smaller limit is kept for the pages
// after it.
type Pager struct {
	Lister    Lister
	GVR       schema.GroupVersionResource
	Namespace string
	Limit     int64
	// Requests counts the list requests made.
	Requests int

	cont string
	done bool
}

// Next lists the next page; ok is false after the last one. An error ends
// the walk.
func (p *Pager) Next(ctx context.Context) (page Page, ok bool, err error) {
	if p.done {
		return Page{}, false, nil
	}
	for {
		p.Requests++
		page, err = p.Lister.ListPage(ctx, p.GVR, p.Namespace, p.Limit, p.cont)
		if !errors.Is(err, ErrTooLarge) || p.Limit <= 1 {
			break
		}
		p.Limit = max(1, p.Limit/2)
	}
	if err != nil {
		p.done = true
		return Page{}, false, err
	}
	p.cont = page.Continue
	p.done = p.cont == ""
	return page, true, nil
}
