package kyverno

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/value"
)

func TestStrategicMerge(t *testing.T) {
	pod := `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"env": "dev"}},
		"spec": {"containers": [{"name": "a", "image": "nginx:latest"}, {"name": "b", "image": "envoy:1"}]}}`
	deploy := `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 3}}`
	for _, tc := range []struct {
		name, obj, overlay, want, err string
	}{
		{
			name:    "a conditional list element applies to the elements it holds for, by name",
			obj:     pod,
			overlay: `{"spec": {"containers": [{"(image)": "*:latest", "imagePullPolicy": "Always"}]}}`,
			want: `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"env": "dev"}},
				"spec": {"containers": [{"name": "a", "image": "nginx:latest", "imagePullPolicy": "Always"}, {"name": "b", "image": "envoy:1"}]}}`,
		},
		{
			name:    "add if not present: present, nothing",
			obj:     pod,
			overlay: `{"metadata": {"labels": {"+(env)": "prod"}}}`,
			want:    pod,
		},
		{
			name:    "add if not present: absent, added",
			obj:     pod,
			overlay: `{"metadata": {"labels": {"+(team)": "web"}}}`,
			want: `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"env": "dev", "team": "web"}},
				"spec": {"containers": [{"name": "a", "image": "nginx:latest"}, {"name": "b", "image": "envoy:1"}]}}`,
		},
		{
			name:    "a conditional anchor of a map that does not hold leaves the object as it is",
			obj:     pod,
			overlay: `{"metadata": {"labels": {"(env)": "prod", "tier": "gold"}}}`,
			want:    pod,
		},
		{
			name:    "a conditional anchor that holds applies its siblings",
			obj:     pod,
			overlay: `{"metadata": {"labels": {"(env)": "dev", "tier": "gold"}}}`,
			want: `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"env": "dev", "tier": "gold"}},
				"spec": {"containers": [{"name": "a", "image": "nginx:latest"}, {"name": "b", "image": "envoy:1"}]}}`,
		},
		{
			name:    "a global anchor in a list element that no element holds for: nothing",
			obj:     pod,
			overlay: `{"spec": {"containers": [{"<(image)": "busybox*"}]}, "metadata": {"labels": {"busybox": "yes"}}}`,
			want:    pod,
		},
		{
			name:    "a global anchor that one element holds for: the rest applies",
			obj:     pod,
			overlay: `{"spec": {"containers": [{"<(image)": "envoy*"}]}, "metadata": {"labels": {"mesh": "yes"}}}`,
			want: `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"env": "dev", "mesh": "yes"}},
				"spec": {"containers": [{"name": "a", "image": "nginx:latest"}, {"name": "b", "image": "envoy:1"}]}}`,
		},
		{
			name:    "a missing key fails its condition",
			obj:     pod,
			overlay: `{"spec": {"(hostNetwork)": true, "dnsPolicy": "None"}}`,
			want:    pod,
		},
		{
			name:    "scalars compared in their text form",
			obj:     deploy,
			overlay: `{"spec": {"(replicas)": 3, "paused": true}}`,
			want:    `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 3, "paused": true}}`,
		},
		{
			name:    "an operator in a condition",
			obj:     deploy,
			overlay: `{"spec": {"(replicas)": ">2", "minReadySeconds": 5}}`,
			want:    `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 3, "minReadySeconds": 5}}`,
		},
		{
			name:    "$patch: delete removes a container by its merge key",
			obj:     pod,
			overlay: `{"spec": {"containers": [{"name": "b", "$patch": "delete"}]}}`,
			want: `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"env": "dev"}},
				"spec": {"containers": [{"name": "a", "image": "nginx:latest"}]}}`,
		},
		{
			name:    "containers merged by name: the patch's first, in its order (kustomize prepends)",
			obj:     pod,
			overlay: `{"spec": {"containers": [{"name": "b", "image": "envoy:2"}, {"name": "c", "image": "log:1"}]}}`,
			want: `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"env": "dev"}},
				"spec": {"containers": [{"name": "b", "image": "envoy:2"}, {"name": "c", "image": "log:1"}, {"name": "a", "image": "nginx:latest"}]}}`,
		},
		{
			name:    "not an object",
			obj:     pod,
			overlay: `["a"]`,
			err:     "failed to preProcess rule: patchStrategicMerge is a JSON array, not an object",
		},
		{
			name:    "a list where the object has a map",
			obj:     pod,
			overlay: `{"metadata": {"labels": [{"(a)": "b"}]}}`,
			err:     "failed to preProcess rule: the overlay has a list where the object has a JSON object",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj, _ := value.Decode([]byte(tc.obj))
			before := value.DeepCopy(obj)
			ov, err := value.Decode([]byte(tc.overlay))
			if err != nil {
				t.Fatal(err)
			}
			got, err := strategicMerge(obj, ov)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, _ := value.Decode([]byte(tc.want))
			if !value.Equal(got, want) {
				t.Errorf("got %s\nwant %s", value.Text(got), value.Text(want))
			}
			if d := cmp.Diff(before, obj); d != "" {
				t.Errorf("the object changed (-before +after):\n%s", d)
			}
		})
	}
}

// mergeObjects are the objects the pruned merge is checked on.
var mergeObjects = []string{
	`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "1", "b": "2"}, "annotations": {"x": "y"}},
		"spec": {"containers": [{"name": "a", "image": "nginx", "ports": [{"containerPort": 80}], "env": [{"name": "E", "value": "1"}]}, {"name": "b", "image": "envoy"}],
		"volumes": [{"name": "v", "emptyDir": {}}], "securityContext": {"runAsUser": 1}}}`,
	`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q", "labels": {"only": "one"}}, "spec": {"containers": [{"name": "a", "image": "nginx"}]}}`,
	`{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"app": "d"}},
		"spec": {"replicas": 2, "selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}`,
	`{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"items": [{"name": "a", "n": 1}], "nested": {"x": {"y": 1, "z": 2}}}}`,
	`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "r"}, "spec": {"containers": [
		{"name": "a", "image": "nginx", "ports": [{"name": "http", "containerPort": 80}, {"name": "m", "containerPort": 9090}], "env": [{"name": "E", "value": "1"}, {"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}], "resources": {"limits": {"cpu": "1"}}},
		{"name": "b", "image": "envoy", "securityContext": {"privileged": true, "capabilities": {"add": ["NET_ADMIN"]}}}],
		"volumes": [{"name": "v", "emptyDir": {}}, {"name": "w", "configMap": {"name": "cm"}}]}}`,
}

// mergeOverlays are overlays that delete, replace, empty and add, at every
// level the pruning cuts.
var mergeOverlays = []string{
	`{"metadata": {"labels": {"a": null}}}`,
	`{"metadata": {"labels": {"only": null}}}`,
	`{"metadata": {"labels": {"a": null, "b": null}}}`,
	`{"metadata": {"labels": {"c": "3"}, "annotations": null}}`,
	`{"metadata": {"labels": {"$patch": "replace", "z": "9"}}}`,
	`{"metadata": {"labels": {"$patch": "delete"}}}`,
	`{"metadata": {"$patch": "delete"}}`,
	`{"spec": {"securityContext": {"runAsUser": null}}}`,
	`{"spec": {"securityContext": {"runAsNonRoot": true}}}`,
	`{"spec": {"containers": [{"name": "a", "image": "x"}]}}`,
	`{"spec": {"containers": [{"name": "b", "$patch": "delete"}]}}`,
	`{"spec": {"template": {"spec": {"containers": [{"name": "c", "imagePullPolicy": "Always"}]}}}}`,
	`{"spec": {"nested": {"x": {"y": null}}}}`,
	`{"spec": {"nested": {"x": {"y": null, "z": null}}}}`,
	`{"spec": {"nested": {"x": null}}}`,
	`{"spec": {"nested": {"x": {}}}}`,
	`{"spec": {"items": [{"name": "a", "n": 2}]}}`,
	`{"spec": {"$retainKeys": ["containers"], "containers": [{"name": "a"}]}}`,
	`{"metadata": {"name": "renamed"}, "kind": "Pod"}`,
	`{"spec": {}}`,
	`{}`,
	`{"spec": {"containers": [{"name": "b", "imagePullPolicy": "Always"}]}}`,
	`{"spec": {"containers": [{"name": "z", "image": "new"}]}}`,
	`{"spec": {"containers": [{"name": "a", "image": null}]}}`,
	`{"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": null}}}]}}`,
	`{"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": null}, "requests": {"cpu": "1"}}}]}}`,
	`{"spec": {"containers": [{"name": "a", "env": [{"name": "E", "value": "2"}, {"name": "G", "value": "3"}]}]}}`,
	`{"spec": {"containers": [{"name": "a", "ports": [{"name": "http", "containerPort": 8080}]}]}}`,
	`{"spec": {"containers": [{"name": "a", "ports": [{"name": "web", "containerPort": 80}]}]}}`,
	`{"spec": {"containers": [{"name": "b", "securityContext": {"privileged": null, "capabilities": {"add": null}}}]}}`,
	`{"spec": {"containers": [{"name": "b", "securityContext": null}, {"name": "a", "image": "x"}]}}`,
	`{"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}`,
	`{"spec": {"volumes": [{"name": "w", "configMap": {"name": "other"}}, {"name": "x", "emptyDir": {}}]}}`,
	`{"spec": {"volumes": [{"name": "w", "configMap": null, "secret": {"secretName": "s"}}]}}`,
	`{"spec": {"items": [{"name": "b", "n": 3}, {"name": "a", "n": null}]}}`,
	`{"spec": {"containers": [{"image": "noname"}]}}`,
	// Overlays the fast merge (fastMerge) takes: maps, scalars, lists
	// merged by their key (added, reordered) or replaced.
	`{"metadata": {"labels": {"c": "3", "a": "9"}, "annotations": {"n": "1"}}}`,
	`{"metadata": {"labels": {"new": "x"}, "finalizers": ["f"]}}`,
	`{"spec": {"containers": [{"name": "b", "image": "x"}, {"name": "a", "imagePullPolicy": "Always"}]}}`,
	`{"spec": {"containers": [{"name": "z", "image": "new", "args": ["-v"]}, {"name": "a", "image": "y"}]}}`,
	`{"spec": {"containers": [{"name": "a", "args": ["x", "y"], "command": ["sh"]}]}}`,
	`{"spec": {"containers": [{"name": "a", "env": [{"name": "N", "value": "1"}], "ports": [{"containerPort": 80, "name": "p"}, {"containerPort": 443}]}]}}`,
	`{"spec": {"containers": [{"name": "a", "ports": [{"containerPort": "80"}]}]}}`,
	`{"spec": {"containers": [{"name": "b", "securityContext": {"capabilities": {"add": ["SYS_TIME"], "drop": ["ALL"]}}}]}}`,
	`{"spec": {"tolerations": [{"key": "k", "operator": "Exists"}], "nodeSelector": {"zone": "a"}}}`,
	`{"spec": {"volumes": [{"name": "v", "emptyDir": {"medium": "Memory"}}, {"name": "n", "configMap": {"name": "c"}}]}}`,
	`{"spec": {"template": {"metadata": {"labels": {"t": "1"}}, "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1"}}}]}}}}`,
	`{"spec": {"template": {"spec": {"initContainers": [{"name": "init", "image": "busybox"}]}}}}`,
	`{"spec": {"replicas": 3, "selector": {"matchLabels": {"x": "y"}}}}`,
	`{"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]}}`,
	`{"spec": {"containers": [{"name": 1, "image": "x"}]}}`,
	`{"spec": {"containers": {"name": "a"}}}`,
	`{"metadata": {"labels": "flat"}}`,
	`{"kind": "Service", "spec": {"ports": [{"port": 80}]}}`,
}

// TestMergePruned: merging only the part of the object an overlay reaches
// gives what merging the whole object gives.
func TestMergePruned(t *testing.T) {
	fast, all := 0, 0
	for _, o := range mergeObjects {
		for _, p := range mergeOverlays {
			checkMergePruned(t, o, p)
			obj, _ := value.Decode([]byte(o))
			ov, _ := value.Decode([]byte(p))
			if m, ok := ov.(map[string]any); ok {
				all++
				if _, ok := fastMerge(obj, value.DeepCopy(m).(map[string]any)); ok {
					fast++
				}
			}
		}
	}
	// The fast merge (fastMerge) takes a good part of them, the rest go
	// through kustomize: both are held to kustomize's whole merge.
	t.Logf("%d of %d overlays merged without kustomize's walk", fast, all)
	if fast < all/8 || fast == all {
		t.Errorf("%d of %d overlays merged without kustomize's walk: the cases no longer cover both merges", fast, all)
	}
}

func checkMergePruned(t *testing.T, objText, ovText string) {
	t.Helper()
	obj, err := value.Decode([]byte(objText))
	if err != nil {
		t.Fatal(err)
	}
	ov, err := value.Decode([]byte(ovText))
	m, ok := ov.(map[string]any)
	if err != nil || !ok {
		return
	}
	before := value.DeepCopy(obj)
	want, werr := mergeWhole(obj, value.DeepCopy(m).(map[string]any))
	got, gerr := mergeJSON(obj, value.DeepCopy(m).(map[string]any))
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("overlay %s on %s: error %v, the whole object's %v", ovText, objText, gerr, werr)
	}
	if werr == nil && !value.Equal(want, got) {
		t.Errorf("overlay %s on %s:\n  pruned %s\n  whole  %s", ovText, objText, value.Text(got), value.Text(want))
	}
	if !value.Equal(before, obj) {
		t.Errorf("overlay %s changed the object", ovText)
	}
}

// FuzzMergePruned holds the pruned merge to the whole one on arbitrary
// overlays.
func FuzzMergePruned(f *testing.F) {
	for _, p := range mergeOverlays {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, ov string) {
		for _, o := range mergeObjects {
			checkMergePruned(t, o, ov)
		}
	})
}
