package images_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/kinds/images"
	"github.com/modwright/modwright/internal/value"
)

const digest = "sha256:dead07b4d8ed7e29e98de0f4504d87e8880d4347859d839686a31da35a3b532f"

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want images.Info
	}{
		{"nginx", images.Info{Registry: "docker.io", Path: "nginx", Name: "nginx", Tag: "latest", Reference: "docker.io/nginx:latest", ReferenceWithTag: "docker.io/nginx:latest"}},
		{"nginx:v10.3", images.Info{Registry: "docker.io", Path: "nginx", Name: "nginx", Tag: "v10.3", Reference: "docker.io/nginx:v10.3", ReferenceWithTag: "docker.io/nginx:v10.3"}},
		{"test/nginx", images.Info{Registry: "docker.io", Path: "test/nginx", Name: "nginx", Tag: "latest", Reference: "docker.io/test/nginx:latest", ReferenceWithTag: "docker.io/test/nginx:latest"}},
		{"localhost:4443/test/nginx", images.Info{Registry: "localhost:4443", Path: "test/nginx", Name: "nginx", Tag: "latest", Reference: "localhost:4443/test/nginx:latest", ReferenceWithTag: "localhost:4443/test/nginx:latest"}},
		{"localhost/netd:v0.4.4-gke.0", images.Info{Registry: "localhost", Path: "netd", Name: "netd", Tag: "v0.4.4-gke.0", Reference: "localhost/netd:v0.4.4-gke.0", ReferenceWithTag: "localhost/netd:v0.4.4-gke.0"}},
		{"ghcr.io/org/team/app:1.2", images.Info{Registry: "ghcr.io", Path: "org/team/app", Name: "app", Tag: "1.2", Reference: "ghcr.io/org/team/app:1.2", ReferenceWithTag: "ghcr.io/org/team/app:1.2"}},
		// A digest without a tag: referenceWithTag ends with ":", as Kyverno's.
		{"docker.io/test/centos@" + digest, images.Info{Registry: "docker.io", Path: "test/centos", Name: "centos", Digest: digest, Reference: "docker.io/test/centos@" + digest, ReferenceWithTag: "docker.io/test/centos:"}},
		{"quay.io/a/b:1@" + digest, images.Info{Registry: "quay.io", Path: "a/b", Name: "b", Tag: "1", Digest: digest, Reference: "quay.io/a/b@" + digest, ReferenceWithTag: "quay.io/a/b:1"}},
		// An upper-case first element is a host (it cannot be a repository).
		{"Registry/app", images.Info{Registry: "Registry", Path: "app", Name: "app", Tag: "latest", Reference: "Registry/app:latest", ReferenceWithTag: "Registry/app:latest"}},
	} {
		got, err := images.Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", c.in, d)
		}
	}
	for _, bad := range []string{"", "UPPER", "nginx:", "a b", "nginx@sha256:short", "/nginx"} {
		if _, err := images.Parse(bad); !errors.Is(err, images.ErrBadImage) {
			t.Errorf("Parse(%q) error %v, want ErrBadImage", bad, err)
		}
	}
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	v, err := value.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}

func TestExtract(t *testing.T) {
	pod := `{"spec": {"initContainers": [{"name": "init", "image": "busybox:1.36"}],
		"containers": [{"name": "app", "image": "ghcr.io/a/app:2"}, {"name": "side", "image": "envoy"}, {"name": "noimage"}],
		"ephemeralContainers": [{"name": "debug", "image": "debug@` + digest + `"}]}}`
	for _, c := range []struct {
		name, kind, obj string
		want            string // JSON
		wantErr         bool
	}{{
		name: "pod, all sorts", kind: "Pod", obj: pod,
		want: `{"initContainers": {"init": {"registry": "docker.io", "path": "busybox", "name": "busybox", "tag": "1.36", "reference": "docker.io/busybox:1.36", "referenceWithTag": "docker.io/busybox:1.36", "jsonPointer": "/spec/initContainers/0/image"}},
			"containers": {"app": {"registry": "ghcr.io", "path": "a/app", "name": "app", "tag": "2", "reference": "ghcr.io/a/app:2", "referenceWithTag": "ghcr.io/a/app:2", "jsonPointer": "/spec/containers/0/image"},
				"side": {"registry": "docker.io", "path": "envoy", "name": "envoy", "tag": "latest", "reference": "docker.io/envoy:latest", "referenceWithTag": "docker.io/envoy:latest", "jsonPointer": "/spec/containers/1/image"}},
			"ephemeralContainers": {"debug": {"registry": "docker.io", "path": "debug", "name": "debug", "digest": "` + digest + `", "reference": "docker.io/debug@` + digest + `", "referenceWithTag": "docker.io/debug:", "jsonPointer": "/spec/ephemeralContainers/0/image"}}}`,
	}, {
		name: "deployment", kind: "Deployment", obj: `{"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}}}}`,
		want: `{"containers": {"web": {"registry": "docker.io", "path": "nginx", "name": "nginx", "tag": "1.25", "reference": "docker.io/nginx:1.25", "referenceWithTag": "docker.io/nginx:1.25", "jsonPointer": "/spec/template/spec/containers/0/image"}}}`,
	}, {
		name: "cronjob", kind: "CronJob", obj: `{"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "r.io/j:1"}]}}}}}}`,
		want: `{"containers": {"c": {"registry": "r.io", "path": "j", "name": "j", "tag": "1", "reference": "r.io/j:1", "referenceWithTag": "r.io/j:1", "jsonPointer": "/spec/jobTemplate/spec/template/spec/containers/0/image"}}}`,
	}, {
		name: "a kind without containers", kind: "ConfigMap", obj: `{"data": {"a": "b"}}`, want: `null`,
	}, {
		name: "a deployment without a template", kind: "Deployment", obj: `{"spec": {}}`, want: `null`,
	}, {
		name: "a bad image", kind: "Pod", obj: `{"spec": {"containers": [{"name": "x", "image": "Bad Image"}]}}`, wantErr: true,
	}} {
		t.Run(c.name, func(t *testing.T) {
			got, err := images.Extract(c.kind, decode(t, c.obj))
			if c.wantErr {
				if !errors.Is(err, images.ErrBadImage) {
					t.Fatalf("error %v, want ErrBadImage", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want any
			if err := json.Unmarshal([]byte(c.want), &want); err != nil {
				t.Fatal(err)
			}
			var gotAny any
			if got != nil {
				gotAny = map[string]any(got)
			}
			if d := cmp.Diff(want, gotAny); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"nginx", "a/b:c@" + digest, "localhost:5000/x", "UPPER/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		in, err := images.Parse(s)
		if err == nil && (in.Path == "" || in.Reference == "") {
			t.Fatalf("Parse(%q) = %+v", s, in)
		}
	})
}

func BenchmarkExtract(b *testing.B) {
	obj, err := value.Decode([]byte(`{"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "nginx:1.25"}, {"name": "b", "image": "ghcr.io/x/y:2"}, {"name": "c", "image": "envoy"}]}}}}`))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := images.Extract("Deployment", obj.(map[string]any)); err != nil {
			b.Fatal(err)
		}
	}
}
