package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/value"
)

// A context file as Kyverno's CLI reads it (a kyverno-test.yaml's
// context:, or --context), for its CEL libraries: the objects the
// cluster holds and the data of images.
//
//	apiVersion: cli.kyverno.io/v1alpha1   # or cli.modwright.io/v1alpha1
//	kind: Context
//	spec:
//	  resources: [...objects...]
//	  images:
//	  - image: ghcr.io/org/app:v1         # as the policy names it
//	    resolvedImage: ..., registry: ..., repository: ..., tag: ..., digest: ...
//	    manifest: {...}
//	    config: {...}
//
// Reads of the API server by path (Kyverno's resource library, a
// Policy's apiCall) are answered from the context objects, whichever
// file gave them, when no recorded response answers them: a GET of an
// object (404 when the context holds others of its resource but not it)
// or of a collection, in a namespace or across them, with a label
// selector.
const kindContext = "Context"

var (
	_ engine.ImageReader = (*staticResolver)(nil)
)

// addContextFile records a Context document's objects and images.
func (r *staticResolver) addContextFile(c contextDoc) error {
	spec, _ := c.Object["spec"].(map[string]any)
	if spec == nil {
		return fmt.Errorf("%s: %s %s: spec must be an object with resources and images", c.Origin, c.APIVersion(), c.Kind())
	}
	objs, _ := spec["resources"].([]any)
	for i, o := range objs {
		m, _ := o.(map[string]any)
		d := source.Document{Object: m, Origin: fmt.Sprintf("%s: spec.resources[%d]", c.Origin, i)}
		if m == nil || d.Kind() == "" || d.Name() == "" {
			return fmt.Errorf("%s: an object needs apiVersion, kind and metadata.name", d.Origin)
		}
		r.addObject(&d)
	}
	imgs, _ := spec["images"].([]any)
	for i, im := range imgs {
		m, _ := im.(map[string]any)
		ref, _ := m["image"].(string)
		if ref == "" {
			return fmt.Errorf("%s: spec.images[%d]: image must name the image as the policies do", c.Origin, i)
		}
		if r.images == nil {
			r.images = map[string]map[string]any{}
		}
		if _, dup := r.images[ref]; dup {
			return fmt.Errorf("%s: spec.images[%d]: a second entry for %s", c.Origin, i, ref)
		}
		r.images[ref] = m
	}
	return nil
}

// ImageData is the context file's data of image.
func (r *staticResolver) ImageData(_ context.Context, image string) (map[string]any, error) {
	if r.images == nil {
		return nil, engine.NoReader(fmt.Sprintf("image data for %s: no context file gives images (spec.images of a %s %s)", image, kyvernoCLIAPIVersion, kindContext))
	}
	m, ok := r.images[image]
	if !ok {
		return nil, fmt.Errorf("image data for %s not found in the context", image)
	}
	return m, nil
}

// answerObjects answers a GET of an API path from the context objects of
// its resource (found by the kinds' plurals); ok is false when the path
// is not a resource read or the context holds no object of its resource.
func (r *staticResolver) answerObjects(method, path string) (body []byte, ok bool, err error) {
	if method != "" && method != http.MethodGet {
		return nil, false, nil
	}
	u, err := url.Parse(path)
	if err != nil {
		return nil, false, nil
	}
	infos := &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	info, err := infos.NewRequestInfo(&http.Request{Method: http.MethodGet, URL: u})
	if err != nil || !info.IsResourceRequest || info.Subresource != "" || (info.Verb != "get" && info.Verb != "list") {
		return nil, false, nil
	}
	var sel k8slabels.Selector
	if q := u.Query().Get("labelSelector"); q != "" && info.Verb == "list" {
		if sel, err = k8slabels.Parse(q); err != nil {
			return nil, true, apierrors.NewBadRequest(fmt.Sprintf("labelSelector: %v", err))
		}
	}
	var refs []engine.ObjectRef
	kind := ""
	for ref, o := range r.objects {
		if ref.Group != info.APIGroup {
			continue
		}
		gvr, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Group: ref.Group, Kind: ref.Kind})
		if gvr.Resource != info.Resource {
			continue
		}
		kind = ref.Kind
		if info.Namespace != "" && ref.Namespace != info.Namespace && ref.Namespace != "" {
			continue
		}
		if info.Name != "" && ref.Name != info.Name {
			continue
		}
		if sel != nil && !sel.Matches(labelsOf(o)) {
			continue
		}
		refs = append(refs, ref)
	}
	if kind == "" {
		return nil, false, nil
	}
	gv := schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
	if info.Verb == "get" {
		if len(refs) == 0 {
			return nil, true, apierrors.NewNotFound(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}, info.Name)
		}
		b, err := value.Encode(r.objects[refs[0]])
		return b, true, err
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
	items := make([]any, len(refs))
	for i, ref := range refs {
		items[i] = r.objects[ref]
	}
	b, err := value.Encode(map[string]any{"apiVersion": gv.String(), "kind": kind + "List", "metadata": map[string]any{}, "items": items})
	return b, true, err
}

// labelsOf is an object's labels as a label set.
func labelsOf(o map[string]any) k8slabels.Set {
	md, _ := o["metadata"].(map[string]any)
	ls := k8slabels.Set{}
	if m, ok := md["labels"].(map[string]any); ok {
		for k, v := range m {
			ls[k], _ = v.(string)
		}
	}
	return ls
}
