package auditor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/modwright/modwright/internal/admissionpolicy"
	"github.com/modwright/modwright/internal/audit"
)

// The resources ClusterAdmissionPolicies reads.
var (
	vapResource     = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	vapBindResource = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}
	nsResource      = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// MaxPolicyObjects bounds the objects (Namespaces and params) the
// cluster's admission policies are audited with.
const MaxPolicyObjects = 100000

// ClusterAdmissionPolicies reads the cluster's ValidatingAdmissionPolicies
// and their bindings (which the API server never audits), the Namespaces
// their namespaceSelectors read and the params of their paramKinds, each
// time it is called (a full scan calls it): nil when there is no policy.
// A policy that does not compile is logged and left out; one whose
// params cannot be listed is audited without them (its bindings with
// params then deny as the API server would: "no params found").
func ClusterAdmissionPolicies(client dynamic.Interface, mapper meta.RESTMapper, log logr.Logger) func(ctx context.Context) (*audit.AdmissionPolicies, error) {
	return func(ctx context.Context) (*audit.AdmissionPolicies, error) {
		policies, err := ListObjects(ctx, client.Resource(vapResource), MaxPolicyObjects)
		if err != nil || len(policies) == 0 {
			return nil, err
		}
		bindings, err := ListObjects(ctx, client.Resource(vapBindResource), MaxPolicyObjects)
		if err != nil {
			return nil, err
		}
		set := admissionpolicy.NewSet()
		params := map[schema.GroupVersionKind]bool{}
		for _, p := range policies {
			if err := set.Add(p); err != nil {
				log.Error(err, "a ValidatingAdmissionPolicy that does not compile is not audited", "policy", name(p))
				continue
			}
			if pk, ok := p["spec"].(map[string]any)["paramKind"].(map[string]any); ok {
				av, _ := pk["apiVersion"].(string)
				kind, _ := pk["kind"].(string)
				if gv, err := schema.ParseGroupVersion(av); err == nil && kind != "" {
					params[gv.WithKind(kind)] = true
				}
			}
		}
		for _, b := range bindings {
			if err := set.Add(b); err != nil {
				log.Error(err, "a ValidatingAdmissionPolicyBinding that does not decode is left out", "binding", name(b))
			}
		}
		objects, err := ListObjects(ctx, client.Resource(nsResource), MaxPolicyObjects)
		if err != nil {
			return nil, fmt.Errorf("the admission policies' namespaces: %w", err)
		}
		for gvk := range params {
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err == nil {
				var ps []map[string]any
				if ps, err = ListObjects(ctx, client.Resource(m.Resource), MaxPolicyObjects-len(objects)); err == nil {
					objects = append(objects, ps...)
					continue
				}
			}
			log.Error(err, "the params of an admission policy cannot be read; its bindings with params are audited without them", "paramKind", gvk.String())
		}
		return audit.NewAdmissionPolicies(set, objects, metav1.NamespaceDefault)
	}
}

// ClusterAdmissionPoliciesVersion names the state of the cluster's
// ValidatingAdmissionPolicies and their bindings: their names and
// resourceVersions (two lists).
func ClusterAdmissionPoliciesVersion(client dynamic.Interface) func(ctx context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		var b strings.Builder
		for _, gvr := range []schema.GroupVersionResource{vapResource, vapBindResource} {
			objs, err := ListObjects(ctx, client.Resource(gvr), MaxPolicyObjects)
			if err != nil {
				return "", err
			}
			names := make([]string, 0, len(objs))
			for _, o := range objs {
				md, _ := o["metadata"].(map[string]any)
				rv, _ := md["resourceVersion"].(string)
				names = append(names, name(o)+"@"+rv)
			}
			slices.Sort(names)
			b.WriteString(gvr.Resource + ":" + strings.Join(names, ",") + ";")
		}
		return b.String(), nil
	}
}

func name(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	n, _ := md["name"].(string)
	return n
}

// ListObjects lists a resource's objects page by page (500 a page), at
// most max: more is an error.
func ListObjects(ctx context.Context, ri dynamic.ResourceInterface, max int) ([]map[string]any, error) {
	var out []map[string]any
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := ri.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			if len(out) >= max {
				return nil, fmt.Errorf("more than %d objects", max)
			}
			out = append(out, l.Items[i].Object)
		}
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}
