package admissionpolicy_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/modwright/modwright/internal/admissionpolicy"
)

func load(t *testing.T) *admissionpolicy.Set {
	t.Helper()
	return loadFile(t, "../../testdata/native/policies.yaml")
}

func TestValidate(t *testing.T) {
	set := load(t)
	ns := func(name string, labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name, "labels": labels}}
	}
	objects := []map[string]any{
		ns("max-keys", map[string]any{"policy": "max-keys"}), ns("owner-label", map[string]any{"policy": "owner-label"}),
		ns("limits", map[string]any{"policy": "limits"}), ns("named", map[string]any{"policy": "named"}),
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "limits", "namespace": "params"}, "data": map[string]any{"maxKeys": "1"}},
	}
	cm := func(ns, name string, data map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": ns}, "data": data}
	}
	prepared := admissionpolicy.PrepareObjects(objects, nil, "")
	for _, c := range []struct {
		name, want, warning string
		obj                 map[string]any
		code                int32
	}{
		{name: "denied", obj: cm("max-keys", "b", map[string]any{"a": "1", "b": "2", "c": "3"}), code: 422,
			want: `configmaps "b" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys' denied request: at most 2 keys`},
		{name: "admitted", obj: cm("max-keys", "a", map[string]any{"a": "1"})},
		{name: "reason Forbidden", obj: cm("named", "other", nil), code: 403,
			want: `configmaps "other" is forbidden: ValidatingAdmissionPolicy 'named' with binding 'named' denied request: name other must start with cfg-`},
		{name: "params", obj: cm("limits", "b", map[string]any{"a": "1", "b": "2"}), code: 422,
			want: `ValidatingAdmissionPolicy 'limits' with binding 'limits' denied request: at most 1 keys (params limits)`},
		{name: "warned", obj: cm("owner-label", "a", nil),
			warning: `Validation failed for ValidatingAdmissionPolicy 'owner-label' with binding 'owner-label': an owner label is expected`},
		{name: "unmatched namespace", obj: cm("elsewhere", "a", map[string]any{"a": "1", "b": "2", "c": "3"})},
	} {
		// Each case with the objects given, and indexed once for all the
		// cases (Prepared): the same answers.
		for _, prep := range []*admissionpolicy.Objects{nil, prepared} {
			name := c.name
			req := admissionpolicy.Request{Operation: "CREATE", Object: c.obj, Namespace: c.obj["metadata"].(map[string]any)["namespace"].(string), Objects: objects}
			if prep != nil {
				name += "/prepared"
				req.Objects, req.Prepared = nil, prep
			}
			t.Run(name, func(t *testing.T) {
				res := set.Validate(context.Background(), req)
				switch {
				case c.want == "" && res.Err != nil:
					t.Fatalf("want admitted, got %v", res.Err)
				case c.want != "" && (res.Err == nil || !strings.Contains(res.Err.Error(), c.want)):
					t.Fatalf("got %v\nwant %s", res.Err, c.want)
				}
				var se *apierrors.StatusError
				if c.code != 0 && (!errors.As(res.Err, &se) || se.ErrStatus.Code != c.code) {
					t.Errorf("code: %v, want %d", res.Err, c.code)
				}
				if got := strings.Join(res.Warnings, "|"); got != c.warning {
					t.Errorf("warnings %q, want %q", got, c.warning)
				}
			})
		}
	}
	if res := set.Validate(context.Background(), admissionpolicy.Request{Operation: "CREATE", Object: cm("owner-label", "a", nil), Namespace: "owner-label", Objects: objects}); res.Annotations["validation.policy.admission.k8s.io/validation_failure"] == "" {
		t.Errorf("no audit annotation: %v", res.Annotations)
	}
}

// BenchmarkValidateObjects: one request against the test policies with
// 1,000 Namespaces among the objects, the objects given (indexed at each
// request) and prepared once (the background scan's and apply's form).
func BenchmarkValidateObjects(b *testing.B) {
	set := loadFile(b, "../../testdata/native/policies.yaml")
	objects := []map[string]any{{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "max-keys", "labels": map[string]any{"policy": "max-keys"}}}}
	for i := range 1000 {
		objects = append(objects, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": fmt.Sprintf("ns-%d", i)}})
	}
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "b", "namespace": "max-keys"}, "data": map[string]any{"a": "1"}}
	prepared := admissionpolicy.PrepareObjects(objects, nil, "")
	for _, bc := range []struct {
		name string
		req  admissionpolicy.Request
	}{
		{"given", admissionpolicy.Request{Operation: "CREATE", Object: obj, Namespace: "max-keys", Objects: objects}},
		{"prepared", admissionpolicy.Request{Operation: "CREATE", Object: obj, Namespace: "max-keys", Prepared: prepared}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if res := set.Validate(context.Background(), bc.req); res.Err != nil {
					b.Fatal(res.Err)
				}
			}
		})
	}
}
