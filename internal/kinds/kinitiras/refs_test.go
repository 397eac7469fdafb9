package kinitiras

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/testtool"
)

// world is a reference case's cluster objects and HTTP server, served
// without a network: the token routes as the case describes them.
type world struct {
	objects []map[string]any
	fetched []engine.HTTPRequest
}

func (w *world) GetKind(_ context.Context, apiVersion, kind, ns, name string) (map[string]any, error) {
	for _, o := range w.objects {
		md, _ := o["metadata"].(map[string]any)
		if o["apiVersion"] == apiVersion && o["kind"] == kind && md["name"] == name && (md["namespace"] == ns || ns == "" && md["namespace"] == nil) {
			return o, nil
		}
	}
	return nil, nil
}

func (w *world) ListKind(_ context.Context, apiVersion, kind, ns, selector string, _ int) ([]map[string]any, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for _, o := range w.objects {
		md, _ := o["metadata"].(map[string]any)
		ls := labels.Set{}
		if m, ok := md["labels"].(map[string]any); ok {
			for k, v := range m {
				ls[k], _ = v.(string)
			}
		}
		if o["apiVersion"] == apiVersion && o["kind"] == kind && (ns == "" || md["namespace"] == ns) && sel.Matches(ls) {
			out = append(out, o)
		}
	}
	return out, nil
}

func (w *world) Fetch(_ context.Context, r engine.HTTPRequest) (*engine.HTTPResponse, error) {
	w.fetched = append(w.fetched, r)
	u, err := url.Parse(r.URL)
	if err != nil {
		return nil, err
	}
	if u.Host != "127.0.0.1:8090" {
		return nil, fmt.Errorf("no route to %s", u.Host)
	}
	var tok string
	switch u.Path {
	case "/api/v1/token":
		if tok = u.Query().Get("val"); tok == "" {
			tok = r.Header["Authorization"]
		}
	case "/api/v1/auth":
		tok = r.Header["Authorization"]
	default:
		return &engine.HTTPResponse{Status: 404, Body: []byte(`{}`)}, nil
	}
	b, _ := json.Marshal(map[string]string{"token": tok})
	return &engine.HTTPResponse{Status: 200, Body: b}, nil
}

var (
	_ engine.KindReader = (*world)(nil)
	_ engine.HTTPReader = (*world)(nil)
)

// TestConformanceReferences: kinitiras' reference cases, each template's
// k8s, owner and http sources resolved into data.extraParams.
func TestConformanceReferences(t *testing.T) {
	dir := testtool.ConformanceDir(t, "kinitiras", "MODWRIGHT_KINITIRAS_DIR", "reference-cases.json")
	b, err := os.ReadFile(filepath.Join(dir, "reference-cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Name       string          `json:"name"`
			PolicyKind string          `json:"policyKind"`
			Template   json.RawMessage `json:"template"`
			Object     map[string]any  `json:"object"`
			World      struct {
				ClusterObjects []map[string]any `json:"clusterObjects"`
			} `json:"world"`
			Expected map[string]any `json:"expectedExtraParams"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) != 9 {
		t.Errorf("%d cases, want 9", len(file.Cases))
	}
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			var refs []extRef
			if c.PolicyKind == KindClusterValidate {
				var vt ValidateTemplate
				if err := json.Unmarshal(c.Template, &vt); err != nil {
					t.Fatal(err)
				}
				refs = validateRefs(&vt, "template")
			} else {
				var ot OverrideTemplate
				if err := json.Unmarshal(c.Template, &ot); err != nil {
					t.Fatal(err)
				}
				refs = overrideRefs(&ot, "template")
			}
			w := &world{objects: c.World.ClusterObjects}
			got, err := extraParams(context.Background(), &Readers{Kinds: w, HTTP: w}, c.Object, refs)
			if err != nil {
				t.Fatal(err)
			}
			// kinitiras' objects went through typed structs (spec.selector:
			// null and the like); its HTTP answers carry headers. Compare
			// what the case asserts: the object's identity, the body.
			if d := cmp.Diff(essence(c.Expected), essence(got)); d != "" {
				t.Errorf("extraParams (-kinitiras +modwright):\n%s", d)
			}
		})
	}
}

func essence(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		o, _ := v.(map[string]any)
		if body, ok := o["body"]; ok {
			out[k] = body
			continue
		}
		md, _ := o["metadata"].(map[string]any)
		out[k] = fmt.Sprint(o["apiVersion"], " ", o["kind"], " ", md["namespace"], "/", md["name"])
	}
	return out
}

func TestReferences(t *testing.T) {
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web-1", "namespace": "shop",
		"labels":      map[string]any{"app": "web"},
		"annotations": map[string]any{"team": "payments"}}}
	owned := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web-2", "namespace": "shop",
		"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "gone"}}}}
	w := &world{objects: []map[string]any{
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "b", "namespace": "shop", "labels": map[string]any{"team": "payments"}}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a", "namespace": "shop", "labels": map[string]any{"team": "payments"}}},
	}}
	rd := &Readers{Kinds: w, HTTP: w}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("u:p"))
	for _, c := range []struct {
		name string
		obj  map[string]any
		ref  ResourceRef
		want string // the value as JSON, or "error: <text>"
	}{
		{"label selector: the first by name", pod, ResourceRef{From: FromK8s, K8s: &ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Namespace: "{{metadata.namespace}}",
			LabelSelector: mustSelector(`{"matchLabels":{"team":"{{metadata.annotations.team}}"}}`)}}, "a"},
		{"label selector picks nothing", pod, ResourceRef{From: FromK8s, K8s: &ResourceSelector{APIVersion: "v1", Kind: "ConfigMap",
			LabelSelector: mustSelector(`{"matchLabels":{"team":"none"}}`)}}, "absent"},
		{"{{ path }} the object lacks: an empty object", pod, ResourceRef{From: FromK8s, K8s: &ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Name: "{{metadata.annotations.missing}}"}}, "{}"},
		{"named object missing", pod, ResourceRef{From: FromK8s, K8s: &ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "zz"}}, "error: ConfigMap shop/zz not found"},
		{"no owner: absent", pod, ResourceRef{From: FromOwner}, "absent"},
		{"owner missing", owned, ResourceRef{From: FromOwner}, "error: owner ReplicaSet shop/gone not found"},
		{"http with a static token", pod, ResourceRef{From: FromHTTP, Http: &HTTPRef{URL: "http://127.0.0.1:8090/api/v1/auth", Auth: &HTTPAuth{StaticToken: "s3"}}}, `{"token":"Bearer s3"}`},
		{"http with a fetched token", pod, ResourceRef{From: FromHTTP, Http: &HTTPRef{URL: "http://127.0.0.1:8090/api/v1/auth",
			Auth: &HTTPAuth{AuthURL: "http://127.0.0.1:8090/api/v1/token", Username: "u", Password: "p"}}}, `{"token":"Bearer ` + basic + `"}`},
		{"http params from the object", pod, ResourceRef{From: FromHTTP, Http: &HTTPRef{URL: "http://127.0.0.1:8090/api/v1/token", Method: "post", Params: map[string]string{"val": "{{metadata.name}}"}}}, `{"token":"web-1"}`},
		{"http: a 404 answers its body", pod, ResourceRef{From: FromHTTP, Http: &HTTPRef{URL: "http://127.0.0.1:8090/nowhere"}}, `{}`},
		{"http host unreachable", pod, ResourceRef{From: FromHTTP, Http: &HTTPRef{URL: "http://10.0.0.1/x"}}, "error: no route to 10.0.0.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := resolveRef(context.Background(), rd, c.obj, &c.ref)
			var got string
			switch o, _ := v.(map[string]any); {
			case err != nil:
				got = "error: " + err.Error()
			case v == nil:
				got = "absent"
			case o["body"] != nil:
				b, _ := json.Marshal(o["body"])
				got = string(b)
			case o["metadata"] != nil:
				got = objName(o)
			default:
				b, _ := json.Marshal(v)
				got = string(b)
			}
			if !strings.HasPrefix(got, c.want) {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
	if _, err := resolveRef(context.Background(), nil, owned, &ResourceRef{From: FromOwner}); !errors.Is(err, ErrNoReader) {
		t.Errorf("no readers: %v", err)
	}
}

func mustSelector(s string) *metav1.LabelSelector {
	var ls metav1.LabelSelector
	if err := json.Unmarshal([]byte(s), &ls); err != nil {
		panic(err)
	}
	return &ls
}

// TestRefsConfined: a namespaced policy's k8s references read its own
// namespace only; another namespace's Secret (named, or from the object's
// text) and cluster-scoped objects are refused; the cluster kinds read any.
func TestRefsConfined(t *testing.T) {
	secret := func(ns string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "tls", "namespace": ns}, "data": map[string]any{"k": "c2VjcmV0"}}
	}
	w := &world{objects: []map[string]any{secret("team-a"), secret("team-b"), {"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "n1"}}}}
	obj := map[string]any{"metadata": map[string]any{"name": "p", "namespace": "team-a", "annotations": map[string]any{"ns": "team-b"}}}
	ref := func(ns, kind, name string) *ResourceRef {
		return &ResourceRef{From: FromK8s, K8s: &ResourceSelector{APIVersion: "v1", Kind: kind, Namespace: ns, Name: name}}
	}
	for _, tc := range []struct {
		confine string
		ref     *ResourceRef
		refused bool
	}{
		{"team-a", ref("team-a", "Secret", "tls"), false},
		{"team-a", ref("team-b", "Secret", "tls"), true},
		{"team-a", ref("{{metadata.annotations.ns}}", "Secret", "tls"), true},
		{"team-a", ref("", "Node", "n1"), true},
		{"", ref("team-b", "Secret", "tls"), false},
		{"", ref("", "Node", "n1"), false},
	} {
		got, err := resolveRef(context.Background(), &Readers{Kinds: w, Namespace: tc.confine}, obj, tc.ref)
		if tc.refused != errors.Is(err, ErrOutsideNamespace) || !tc.refused && (err != nil || got == nil) {
			t.Errorf("policy in %q reading %s %s/%s: %v, %v; refused: %v", tc.confine, tc.ref.K8s.Kind, tc.ref.K8s.Namespace, tc.ref.K8s.Name, got, err, tc.refused)
		}
	}
}

// TestRefsAuthorized: a namespaced policy's k8s and owner references are
// read only when its rule reader may (Readers.Authorize, asked with the
// kind's resource); the cluster kinds are not asked.
func TestRefsAuthorized(t *testing.T) {
	w := &world{objects: []map[string]any{
		{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "tls", "namespace": "team-a"}},
		{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "team-a"}},
	}}
	obj := map[string]any{"metadata": map[string]any{"name": "p", "namespace": "team-a",
		"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}}}
	var asked []string
	authz := func(owner, group, resource, ns, name string) error {
		asked = append(asked, owner+" "+group+"/"+resource+" "+ns+"/"+name)
		if resource == "secrets" {
			return fmt.Errorf("%w: no", engine.ErrReadForbidden)
		}
		return nil
	}
	secret := &ResourceRef{From: FromK8s, K8s: &ResourceSelector{APIVersion: "v1", Kind: "Secret", Namespace: "team-a", Name: "tls"}}
	if _, err := resolveRef(context.Background(), &Readers{Kinds: w, Namespace: "team-a", Authorize: authz}, obj, secret); !errors.Is(err, engine.ErrReadForbidden) {
		t.Errorf("a Secret its reader may not get: %v", err)
	}
	if got, err := resolveRef(context.Background(), &Readers{Kinds: w, Namespace: "team-a", Authorize: authz}, obj, &ResourceRef{From: FromOwner}); err != nil || got == nil {
		t.Errorf("the owner: %v, %v", got, err)
	}
	if got, err := resolveRef(context.Background(), &Readers{Kinds: w, Authorize: authz}, obj, secret); err != nil || got == nil {
		t.Errorf("a cluster policy: %v, %v", got, err)
	}
	if want := "team-a /secrets team-a/tls|team-a apps/deployments team-a/web"; strings.Join(asked, "|") != want {
		t.Errorf("asked %q, want %q", strings.Join(asked, "|"), want)
	}
}
