package cli

import (
	"context"

	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/nativepolicy"
	"github.com/modwright/modwright/internal/rules"
)

// nativeChain runs Kubernetes' own admission policies around the rules,
// as the API server runs them around its webhooks: the
// MutatingAdmissionPolicies before the rules (and the IfNeeded ones again
// after them), the ValidatingAdmissionPolicies on what the rules admitted.
// apply, explain, test and krm share it.
type nativeChain struct {
	set *nativepolicy.Set // nil: none
	// objects are where params and namespaces are looked up: the context
	// objects.
	objects []map[string]any
	user    user.Info
	// defaultNS is the namespace of a namespaced context object that names
	// none (params among them).
	defaultNS string
}

// newNativeChain is set's chain with the context objects of resolver,
// built once for all the objects admitted; defaultNS is the namespace of
// a namespaced one that names none.
func newNativeChain(set *nativepolicy.Set, resolver engine.ObjectReader, defaultNS string) nativeChain {
	c := nativeChain{set: set, defaultNS: defaultNS}
	if r, ok := resolver.(*staticResolver); ok && r != nil && set.Len() > 0 {
		objs := make([]map[string]any, 0, len(r.objects))
		for _, o := range r.objects {
			objs = append(objs, o)
		}
		c.setObjects(objs)
	}
	u := userOf(resolver)
	c.user = &user.DefaultInfo{Name: u.Username, UID: u.UID, Groups: u.Groups}
	return c
}

// setObjects makes objs the objects params and namespaces are looked up
// in, normalized once (an object that cannot be is left out).
func (c *nativeChain) setObjects(objs []map[string]any) {
	c.objects = c.objects[:0]
	for _, o := range objs {
		if n, err := nativepolicy.Normalize(o); err == nil {
			c.objects = append(c.objects, n)
		}
	}
}

// request is a's admission as the policies see it, with obj as its
// object.
func (c nativeChain) request(a admission, op rules.Operation, obj map[string]any) nativepolicy.Request {
	return nativepolicy.Request{Operation: string(op), Object: obj, OldObject: a.old, Namespace: a.ns, Objects: c.objects, User: c.user,
		ClusterScoped: kinds.IsClusterScoped, DefaultNamespace: c.defaultNS}
}

// mutates reports whether op on an object goes through mutating policies.
func (c nativeChain) mutates(op rules.Operation) bool {
	return c.set.Mutates() && (op == rules.Create || op == rules.Update)
}

// mutate runs the mutating admission of a's object: the policies, then
// rules (the rules on what the policies made of the object: their result,
// nil when they refused it), then the IfNeeded policies again when the
// object changed since they ran. It returns the chain's result (nil when
// the rules refused the object), a policy's refusal, or rules' error.
func (c nativeChain) mutate(ctx context.Context, a admission, op rules.Operation, run func(obj map[string]any) (map[string]any, error)) (out map[string]any, refused, err error) {
	if !c.mutates(op) {
		out, err = run(a.obj)
		return out, nil, err
	}
	out, refused = c.set.Mutate(ctx, c.request(a, op, a.obj), func(obj map[string]any) (map[string]any, error) {
		var m map[string]any
		m, err = run(obj)
		if err != nil {
			return nil, nil // the rules' error ends the chain, reported as such
		}
		return m, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, refused, nil
}

// validate runs the ValidatingAdmissionPolicies on obj, what the rules
// admitted (on DELETE, a's object): nil when there are none.
func (c nativeChain) validate(ctx context.Context, a admission, op rules.Operation, obj map[string]any) *nativepolicy.Result {
	if !c.set.Validates() {
		return nil
	}
	if op == rules.Delete {
		obj = a.obj
	}
	return c.set.Validate(ctx, c.request(a, op, obj))
}
