// Package kyvernoreq is Kyverno's request variable: an admission request
// as Kyverno's JMESPath context and {{ }} variables read it (uid, kind,
// resource, name, namespace, operation, userInfo, dryRun, subResource,
// requestKind, requestResource, options), shared by the kinds that speak
// Kyverno's context (ModwrightPolicy's, Kyverno's own policies). The
// object, old object and roles are the kinds' to add. It also owns what
// an apiCall context entry's urlPath may be (apicall.go: rendered from
// its {{ }} template as path segments, bounded, confined to a namespaced
// rule's namespace).
//
// It must not know rule kinds, HTTP or how calls are made (the engine's
// APIReader makes them).
package kyvernoreq

import (
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/value"
)

// Request is q as Kyverno's request (a JSON value tree without object and
// oldObject); objectKind is the object's kind when q names none.
func Request(q *engine.Request, objectKind string) map[string]any {
	gvk := func(g engine.GroupVersionKind) map[string]any {
		return map[string]any{"group": g.Group, "version": g.Version, "kind": g.Kind}
	}
	gvr := func(g engine.GroupVersionResource) map[string]any {
		return map[string]any{"group": g.Group, "version": g.Version, "resource": g.Resource}
	}
	kind := q.Kind
	if kind.Kind == "" {
		kind.Kind = objectKind
	}
	groups := make([]any, len(q.UserInfo.Groups))
	for i, g := range q.UserInfo.Groups {
		groups[i] = g
	}
	extra := map[string]any{}
	for k, vs := range q.UserInfo.Extra {
		l := make([]any, len(vs))
		for i, v := range vs {
			l[i] = v
		}
		extra[k] = l
	}
	req := map[string]any{
		"uid":       q.UID,
		"kind":      gvk(kind),
		"resource":  gvr(q.Resource),
		"name":      q.Name,
		"namespace": q.Namespace,
		"operation": string(q.Operation),
		"userInfo":  map[string]any{"username": q.UserInfo.Username, "uid": q.UserInfo.UID, "groups": groups, "extra": extra},
		"dryRun":    q.DryRun,
	}
	if q.SubResource != "" {
		req["subResource"] = q.SubResource
	}
	if q.RequestKind.Kind != "" {
		req["requestKind"] = gvk(q.RequestKind)
		req["requestResource"] = gvr(q.RequestResource)
		if q.RequestSubResource != "" {
			req["requestSubResource"] = q.RequestSubResource
		}
	} else {
		req["requestKind"] = gvk(kind)
		req["requestResource"] = gvr(q.Resource)
	}
	if len(q.Options) > 0 {
		if v, err := value.Decode(q.Options); err == nil {
			req["options"] = v
		}
	}
	return req
}
