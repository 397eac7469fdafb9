package load

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readObject(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(objectsDir, file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodedReview is the review as a generic tree.
func decodeReview(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, body)
	}
	return v
}

func TestReviewDeployment(t *testing.T) {
	obj := readObject(t, "deployment.json")
	rv, err := NewReview(obj, "")
	if err != nil {
		t.Fatal(err)
	}
	if rv.Kind != "Deployment" || rv.Name != "nginx-deployment" || rv.Namespace != "bench" {
		t.Errorf("review of %s %s/%s", rv.Kind, rv.Namespace, rv.Name)
	}
	const uid = "0b0e5e7a-3c39-4d6a-8f3e-2a1d5c6b7e8f"
	body := rv.Body(uid)
	if len(body) != rv.Len() {
		t.Errorf("body is %d bytes, Len says %d", len(body), rv.Len())
	}
	prefix := `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"` + uid + `","kind":{"group":"apps","version":"v1","kind":"Deployment"},"resource":{"group":"apps","version":"v1","resource":"deployments"},"requestKind":{"group":"apps","version":"v1","kind":"Deployment"},"requestResource":{"group":"apps","version":"v1","resource":"deployments"},"name":"nginx-deployment","namespace":"bench","operation":"CREATE","userInfo":{"username":"kubernetes-admin","groups":["system:masters","system:authenticated"]},"object":{"kind":"Deployment",`
	if !bytes.HasPrefix(body, []byte(prefix)) {
		t.Errorf("body starts\n%.700s\nwant\n%s", body, prefix)
	}
	suffix := `,"oldObject":null,"dryRun":false,"options":{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1","fieldManager":"kubectl-client-side-apply"}}}`
	if !bytes.HasSuffix(body, []byte(suffix)) {
		t.Errorf("body ends\n%s\nwant\n%s", body[len(body)-len(suffix)-20:], suffix)
	}
	// The object is embedded unchanged (compacted).
	got := decodeReview(t, body)["request"].(map[string]any)["object"]
	var want any
	if err := json.Unmarshal(obj, &want); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("object (-file +review):\n%s", d)
	}
	// A fresh uid per body; the template is not modified.
	other := rv.Body("ffffffff-ffff-4fff-8fff-ffffffffffff")
	if !bytes.Contains(other, []byte(`"uid":"ffffffff-ffff-4fff-8fff-ffffffffffff"`)) || bytes.Contains(other, []byte(uid)) {
		t.Error("second uid not written")
	}
	if !bytes.Contains(rv.Body(uid), []byte(uid)) {
		t.Error("template modified")
	}
	// Other lengths are spliced in and quoted.
	for _, u := range []string{"short", `quo"te`, ""} {
		req := decodeReview(t, rv.Body(u))["request"].(map[string]any)
		if req["uid"] != u {
			t.Errorf("uid %q: got %v", u, req["uid"])
		}
	}
}

func TestReviewCompactSize(t *testing.T) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, readObject(t, "deployment.json")); err != nil {
		t.Fatal(err)
	}
	if n := buf.Len(); n < 3200 || n > 3500 {
		t.Errorf("deployment.json is %d bytes compact, want about 3.3 KB", n)
	}
}

func TestReviewNamespaceOverride(t *testing.T) {
	obj := readObject(t, "pod.json")
	rv, err := NewReview(obj, QuietNamespace)
	if err != nil {
		t.Fatal(err)
	}
	body := rv.Body("0b0e5e7a-3c39-4d6a-8f3e-2a1d5c6b7e8f")
	req := decodeReview(t, body)["request"].(map[string]any)
	meta := req["object"].(map[string]any)["metadata"].(map[string]any)
	if req["namespace"] != QuietNamespace || meta["namespace"] != QuietNamespace || rv.Namespace != QuietNamespace {
		t.Errorf("namespace: request %v, object %v, review %q", req["namespace"], meta["namespace"], rv.Namespace)
	}
	if req["kind"].(map[string]any)["group"] != "" || req["resource"].(map[string]any)["resource"] != "pods" {
		t.Errorf("kind %v resource %v", req["kind"], req["resource"])
	}
	// Key order is kept: metadata still starts with name, namespace.
	if !bytes.Contains(body, []byte(`"metadata":{"name":"nginx-pod","namespace":"quiet","creationTimestamp":null`)) {
		t.Errorf("metadata reordered:\n%.600s", body)
	}
	// Everything else is unchanged.
	var want map[string]any
	if err := json.Unmarshal(obj, &want); err != nil {
		t.Fatal(err)
	}
	want["metadata"].(map[string]any)["namespace"] = QuietNamespace
	if d := cmp.Diff(any(want), req["object"]); d != "" {
		t.Errorf("object (-want +got):\n%s", d)
	}

	// Cluster-scoped objects ignore the override and carry no namespace.
	rv, err = NewReview(readObject(t, "namespace.json"), QuietNamespace)
	if err != nil {
		t.Fatal(err)
	}
	req = decodeReview(t, rv.Body("0b0e5e7a-3c39-4d6a-8f3e-2a1d5c6b7e8f"))["request"].(map[string]any)
	if _, ok := req["namespace"]; ok || rv.Namespace != "" {
		t.Errorf("Namespace review has namespace %v", req["namespace"])
	}
	if req["name"] != "bench" || req["resource"].(map[string]any)["resource"] != "namespaces" {
		t.Errorf("Namespace review: name %v resource %v", req["name"], req["resource"])
	}

	// A namespaced object without a namespace lands in default.
	rv, err = NewReview([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rv.Body("u")), `"metadata":{"name":"x","namespace":"default"}`) || rv.Namespace != "default" {
		t.Errorf("default namespace: %s", rv.Body("u"))
	}
}

func TestReviewEveryObject(t *testing.T) {
	for _, o := range Mix() {
		rv, err := NewReview(readObject(t, o.File), "")
		if err != nil {
			t.Fatalf("%s: %v", o.File, err)
		}
		req := decodeReview(t, rv.Body("0b0e5e7a-3c39-4d6a-8f3e-2a1d5c6b7e8f"))["request"].(map[string]any)
		if req["kind"].(map[string]any)["kind"] != o.Kind {
			t.Errorf("%s: kind %v", o.File, req["kind"])
		}
		meta := req["object"].(map[string]any)["metadata"].(map[string]any)
		if meta["labels"].(map[string]any)["app"] != "nginx" {
			t.Errorf("%s: no label app: nginx", o.File)
		}
		if !o.ClusterScoped && (req["namespace"] != BenchNamespace || meta["namespace"] != BenchNamespace) {
			t.Errorf("%s: namespace %v", o.File, req["namespace"])
		}
		la, _ := meta["annotations"].(map[string]any)["kubectl.kubernetes.io/last-applied-configuration"].(string)
		if !strings.HasSuffix(la, "}\n") || !json.Valid([]byte(la)) {
			t.Errorf("%s: last-applied-configuration %q", o.File, la)
		}
	}
	if _, err := NewReview([]byte(`{"metadata":{}}`), ""); err == nil {
		t.Error("object without kind accepted")
	}
	if _, err := NewReview([]byte(`{`), ""); err == nil {
		t.Error("invalid JSON accepted")
	}
}

func TestResourceOf(t *testing.T) {
	for _, tc := range []struct {
		apiVersion, kind string
		want             GroupVersionResource
	}{
		{"apps/v1", "Deployment", GroupVersionResource{"apps", "v1", "deployments", true}},
		{"v1", "Namespace", GroupVersionResource{"", "v1", "namespaces", false}},
		{"networking.k8s.io/v1", "Ingress", GroupVersionResource{"networking.k8s.io", "v1", "ingresses", true}},
		{"example.com/v1alpha1", "Widget", GroupVersionResource{"example.com", "v1alpha1", "widgets", true}},
		{"example.com/v1", "Policy", GroupVersionResource{"example.com", "v1", "policies", true}},
	} {
		if got := ResourceOf(tc.apiVersion, tc.kind); got != tc.want {
			t.Errorf("ResourceOf(%q, %q) = %+v, want %+v", tc.apiVersion, tc.kind, got, tc.want)
		}
	}
}
