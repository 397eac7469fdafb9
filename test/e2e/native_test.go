package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/admissionpolicy"
)

// TestNativePolicies: for testdata/native/policies.yaml's
// ValidatingAdmissionPolicies and bindings, the real kube-apiserver's
// answers (dry-run creates and updates, with their warnings) and
// admissionpolicy's are the same, messages included, for every object below.
func TestNativePolicies(t *testing.T) {
	cl := startCluster(t, false)
	ctx := context.Background()
	data, err := os.ReadFile("../../testdata/native/policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	set := admissionpolicy.NewSet()
	var objects []map[string]any // what the policies read offline
	dyn, err := dynamic.NewForConfig(cl.cfg)
	if err != nil {
		t.Fatal(err)
	}
	apply := func(m map[string]any) {
		t.Helper()
		u := &unstructured.Unstructured{Object: m}
		gvr := schema.GroupVersionResource{Group: u.GroupVersionKind().Group, Version: u.GroupVersionKind().Version,
			Resource: strings.ToLower(u.GetKind()) + "s"}
		if u.GetKind() == "ValidatingAdmissionPolicy" {
			gvr.Resource = "validatingadmissionpolicies"
		}
		var ri dynamic.ResourceInterface = dyn.Resource(gvr)
		if ns := u.GetNamespace(); ns != "" {
			ri = dyn.Resource(gvr).Namespace(ns)
		}
		if _, err := ri.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		if err := set.Add(m); err != nil {
			t.Fatal(err)
		}
		apply(m)
	}
	// The namespaces, one per policy, and the params.
	namespace := func(name string, labels map[string]any) {
		m := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name, "labels": labels}}
		apply(m)
		objects = append(objects, m)
	}
	for _, p := range []string{"max-keys", "named", "owner-label", "limits", "conditions", "immutable-id", "count", "count-lenient", "secret-type"} {
		namespace(p, map[string]any{"policy": p})
	}
	namespace("limits-gone", map[string]any{"policy": "limits", "params": "missing"})
	namespace("params", map[string]any{})
	limits := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "limits", "namespace": "params"}, "data": map[string]any{"maxKeys": "1"}}
	apply(limits)
	objects = append(objects, limits)

	var rec warnings
	cfg := rest.CopyConfig(cl.cfg)
	cfg.WarningHandlerWithContext = &rec
	wdyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cm := func(ns, name string, data map[string]any, labels map[string]any) map[string]any {
		md := map[string]any{"name": name, "namespace": ns}
		if labels != nil {
			md["labels"] = labels
		}
		m := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}
		if data != nil {
			m["data"] = data
		}
		return m
	}
	secret := func(ns, name, typ string, labels map[string]any) map[string]any {
		md := map[string]any{"name": name, "namespace": ns}
		if labels != nil {
			md["labels"] = labels
		}
		m := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": md, "type": typ}
		if typ == "kubernetes.io/tls" {
			// What the API server's own validation of the type requires.
			m["data"] = map[string]any{"tls.crt": "Y3J0", "tls.key": "a2V5"}
		}
		return m
	}
	kv := func(n int) map[string]any {
		m := map[string]any{}
		for i := range n {
			m[fmt.Sprintf("k%d", i)] = "v"
		}
		return m
	}
	cases := []struct {
		name string
		obj  map[string]any
		old  map[string]any // UPDATE when set
	}{
		{"max-keys: two keys admitted", cm("max-keys", "a", kv(2), nil), nil},
		{"max-keys: three keys denied", cm("max-keys", "b", kv(3), nil), nil},
		{"max-keys: no data admitted", cm("max-keys", "c", nil, nil), nil},
		{"max-keys: update to three keys denied", cm("max-keys", "d", kv(3), nil), cm("max-keys", "d", kv(1), nil)},
		{"named: prefixed admitted", cm("named", "cfg-a", nil, nil), nil},
		{"named: messageExpression and reason Forbidden", cm("named", "other", nil, nil), nil},
		{"owner-label: warned", cm("owner-label", "a", nil, nil), nil},
		{"owner-label: labeled, no warning", cm("owner-label", "b", nil, map[string]any{"owner": "x"}), nil},
		{"limits: one key within the params", cm("limits", "a", kv(1), nil), nil},
		{"limits: two keys over the params", cm("limits", "b", kv(2), nil), nil},
		{"limits: params not found", cm("limits-gone", "a", kv(1), nil), nil},
		{"conditions: not prefixed, not evaluated", cm("conditions", "a", nil, nil), nil},
		{"conditions: prefixed without data denied", cm("conditions", "x-a", nil, nil), nil},
		{"conditions: prefixed with data admitted", cm("conditions", "x-b", kv(1), nil), nil},
		{"conditions: a secret too", secret("conditions", "x-s", "Opaque", nil), nil},
		{"immutable-id: same id admitted", cm("immutable-id", "a", map[string]any{"id": "1", "x": "2"}, nil), cm("immutable-id", "a", map[string]any{"id": "1"}, nil)},
		{"immutable-id: changed id denied", cm("immutable-id", "b", map[string]any{"id": "2"}, nil), cm("immutable-id", "b", map[string]any{"id": "1"}, nil)},
		{"immutable-id: removed id denied", cm("immutable-id", "c", map[string]any{"x": "1"}, nil), cm("immutable-id", "c", map[string]any{"id": "1"}, nil)},
		{"count: below", cm("count", "a", map[string]any{"count": "3"}, nil), nil},
		{"count: above", cm("count", "b", map[string]any{"count": "30"}, nil), nil},
		{"count: an error, failurePolicy Fail", cm("count", "c", map[string]any{"count": "many"}, nil), nil},
		{"count-lenient: an error, failurePolicy Ignore", cm("count-lenient", "c", map[string]any{"count": "many"}, nil), nil},
		{"secret-type: tls admitted", secret("secret-type", "a", "kubernetes.io/tls", nil), nil},
		{"secret-type: opaque denied, reason Invalid", secret("secret-type", "b", "Opaque", nil), nil},
		{"secret-type: excluded by the object selector", secret("secret-type", "c", "Opaque", map[string]any{"skip": "yes"}), nil},
	}
	// The API server's policies become active after their informers
	// sync: wait until a denied case is denied.
	probe := cm("max-keys", "probe", kv(3), nil)
	eventually(t, 30*time.Second, func() error {
		_, err := wdyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("max-keys").
			Create(ctx, &unstructured.Unstructured{Object: probe}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return fmt.Errorf("the policies are not active yet")
		}
		return nil
	})
	time.Sleep(2 * time.Second) // every policy's informer
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: c.obj}
			gvr := schema.GroupVersionResource{Version: "v1", Resource: strings.ToLower(u.GetKind()) + "s"}
			ri := wdyn.Resource(gvr).Namespace(u.GetNamespace())
			op := "CREATE"
			rec.take()
			var apiErr error
			if c.old == nil {
				_, apiErr = ri.Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			} else {
				op = "UPDATE"
				stored, err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, &unstructured.Unstructured{Object: c.old}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				u.SetResourceVersion(stored.GetResourceVersion())
				_, apiErr = ri.Update(ctx, u, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			}
			// The policies' warnings (the API server adds its own, about a
			// TLS Secret's data, say).
			var apiWarnings []string
			for _, w := range rec.take() {
				if strings.Contains(w, "ValidatingAdmissionPolicy") {
					apiWarnings = append(apiWarnings, w)
				}
			}
			ours := set.Validate(ctx, admissionpolicy.Request{Operation: op, Object: c.obj, OldObject: c.old, Namespace: u.GetNamespace(), Objects: objects})
			if got, want := answer(ours.Err), answer(apiErr); got != want {
				t.Errorf("modwright:      %s\nkube-apiserver: %s", got, want)
			}
			if got, want := strings.Join(ours.Warnings, " | "), strings.Join(apiWarnings, " | "); got != want {
				t.Errorf("warnings:\nmodwright:      %s\nkube-apiserver: %s", got, want)
			}
		})
	}
}

func answer(err error) string {
	if err == nil {
		return "admitted"
	}
	return err.Error()
}

// TestMutatingPolicies: for testdata/native/mutating.yaml's
// MutatingAdmissionPolicies and bindings, the real kube-apiserver's
// resulting objects (dry-run creates) and refusals and admissionpolicy's are
// the same for every object below. Each object is first defaulted by the
// API server (a dry-run create in a namespace no policy is bound to), as
// the API server's policies see a defaulted object.
func TestMutatingPolicies(t *testing.T) {
	cl := startCluster(t, false)
	ctx := context.Background()
	data, err := os.ReadFile("../../testdata/native/mutating.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cl.cfg)
	if err != nil {
		t.Fatal(err)
	}
	resource := func(u *unstructured.Unstructured) dynamic.ResourceInterface {
		gvk := u.GroupVersionKind()
		r := strings.ToLower(u.GetKind()) + "s"
		switch u.GetKind() {
		case "MutatingAdmissionPolicy":
			r = "mutatingadmissionpolicies"
		case "ValidatingAdmissionPolicy":
			r = "validatingadmissionpolicies"
		}
		ri := dyn.Resource(schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: r})
		if ns := u.GetNamespace(); ns != "" {
			return ri.(dynamic.NamespaceableResourceInterface).Namespace(ns)
		}
		return ri
	}
	create := func(m map[string]any, dryRun bool) (*unstructured.Unstructured, error) {
		opts := metav1.CreateOptions{}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		u := &unstructured.Unstructured{Object: m}
		return resource(u).Create(ctx, u, opts)
	}
	set := admissionpolicy.NewSet()
	var objects []map[string]any
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		if err := set.Add(m); err != nil {
			t.Fatal(err)
		}
		if _, err := create(m, false); err != nil {
			t.Fatalf("creating %v: %v", m["metadata"], err)
		}
	}
	for _, p := range []string{"team-label", "strict-mode", "defaults", "defaults-gone", "proxy-env", "reinvoke", "broken", "broken-lenient", "plain", "params"} {
		label := p
		if p == "defaults-gone" {
			label = "defaults"
		}
		m := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": p, "labels": map[string]any{"mutate": label}}}
		if _, err := create(m, false); err != nil {
			t.Fatal(err)
		}
		objects = append(objects, m)
	}
	params := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "defaults", "namespace": "params"},
		"data": map[string]any{"region": "eu", "tier": "gold"}}
	if _, err := create(params, false); err != nil {
		t.Fatal(err)
	}
	objects = append(objects, params)

	obj := func(kind, ns, name, rest string) map[string]any {
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(rest), &m); err != nil {
			t.Fatal(err)
		}
		m["apiVersion"], m["kind"] = "v1", kind
		if kind == "Deployment" {
			m["apiVersion"] = "apps/v1"
		}
		md, _ := m["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
		}
		md["name"], md["namespace"] = name, ns
		m["metadata"] = md
		return m
	}
	deployment := `
spec:
  selector: {matchLabels: {app: a}}
  template:
    metadata: {labels: {app: a}}
    spec:
      containers:
      - {name: app, image: app:1, env: [{name: A, value: "1"}]}
      - {name: side, image: side:1}
`
	cases := []struct {
		name string
		obj  map[string]any
	}{
		{"team-label: JSONPatch adds the labels", obj("ConfigMap", "team-label", "a", `{}`)},
		{"team-label: JSONPatch adds a label", obj("ConfigMap", "team-label", "b", `metadata: {labels: {x: z}}`)},
		{"team-label: JSONPatch replaces a label", obj("ConfigMap", "team-label", "c", `metadata: {labels: {team: other}}`)},
		{"strict-mode: variable, ConfigMap", obj("ConfigMap", "strict-mode", "x-a", `data: {k: v}`)},
		{"strict-mode: variable, Secret", obj("Secret", "strict-mode", "x-s", `type: Opaque`)},
		{"strict-mode: match condition false", obj("ConfigMap", "strict-mode", "a", `{}`)},
		{"strict-mode: merged into annotations", obj("ConfigMap", "strict-mode", "x-b", `metadata: {annotations: {mode: loose, other: kept}}`)},
		{"defaults: params merged into data", obj("ConfigMap", "defaults", "a", `data: {region: us, own: "1"}`)},
		{"defaults: params not found", obj("ConfigMap", "defaults-gone", "a", `{}`)},
		{"proxy-env: containers merged by name", obj("Deployment", "proxy-env", "d", deployment)},
		{"reinvoke: IfNeeded policy reinvoked", obj("ConfigMap", "reinvoke", "a", `{}`)},
		{"reinvoke: label given", obj("ConfigMap", "reinvoke", "b", `metadata: {labels: {b: given}}`)},
		{"broken: an error, failurePolicy Fail", obj("ConfigMap", "broken", "a", `data: {count: many}`)},
		{"broken: no error", obj("ConfigMap", "broken", "b", `data: {count: "21"}`)},
		{"broken-lenient: an error, failurePolicy Ignore", obj("ConfigMap", "broken-lenient", "a", `data: {count: many}`)},
	}
	strip := func(u *unstructured.Unstructured) map[string]any {
		if u == nil {
			return nil
		}
		m := u.DeepCopy().Object
		for _, f := range []string{"uid", "creationTimestamp", "resourceVersion", "managedFields", "generation"} {
			unstructured.RemoveNestedField(m, "metadata", f)
		}
		delete(m, "status")
		return m
	}
	// Policies whose expressions do not compile: the API server's refusal
	// to store them and modwright's to load them list the same fields and
	// messages.
	t.Run("invalid policies refused alike", func(t *testing.T) {
		data, err := os.ReadFile("../../testdata/native/invalid.yaml")
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---\n") {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				t.Fatal(err)
			}
			_, apiErr := create(m, true)
			ours := admissionpolicy.NewSet().Add(m)
			if apiErr == nil || ours == nil {
				t.Fatalf("kube-apiserver: %v\nmodwright: %v", apiErr, ours)
			}
			_, want, _ := strings.Cut(apiErr.Error(), " is invalid: ")
			_, got, _ := strings.Cut(ours.Error(), " is invalid: ")
			if got != want || want == "" {
				t.Errorf("modwright:      %s\nkube-apiserver: %s", got, want)
			}
		}
	})
	// The API server's policies become active after their informers
	// sync: wait until the first case is mutated.
	eventually(t, 30*time.Second, func() error {
		u, err := create(obj("ConfigMap", "team-label", "probe", `{}`), true)
		if err != nil {
			return err
		}
		if u.GetLabels()["team"] == "" {
			return fmt.Errorf("the policies are not active yet")
		}
		return nil
	})
	time.Sleep(2 * time.Second) // every policy's informer
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := c.obj["metadata"].(map[string]any)["namespace"].(string)
			plain := runtime.DeepCopyJSON(c.obj)
			plain["metadata"].(map[string]any)["namespace"] = "plain"
			defaulted, err := create(plain, true)
			if err != nil {
				t.Fatal(err)
			}
			in := strip(defaulted)
			in["metadata"].(map[string]any)["namespace"] = ns
			apiObj, apiErr := create(runtime.DeepCopyJSON(in), true)
			ours, err := set.Mutate(ctx, admissionpolicy.Request{Operation: "CREATE", Object: in, Namespace: ns, Objects: objects}, nil)
			if got, want := answer(err), answer(apiErr); got != want {
				t.Fatalf("modwright:      %s\nkube-apiserver: %s", got, want)
			}
			if apiErr != nil {
				return
			}
			if diff := cmp.Diff(strip(apiObj), ours); diff != "" {
				t.Errorf("resulting object (-kube-apiserver +modwright):\n%s", diff)
			}
		})
	}
}
