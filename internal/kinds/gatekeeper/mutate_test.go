package gatekeeper_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/gatekeeper"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/testtool"
	"github.com/modwright/modwright/internal/value"
)

func mutators(t testing.TB, docs []source.Document) *engine.Snapshot {
	t.Helper()
	res := source.LoadRules(docs, kinds.NewRegistry(gatekeeper.NewMutatorKinds()...))
	if len(res.Errors) > 0 {
		t.Fatal(errors.Join(res.Errors...))
	}
	return engine.NewSnapshot(res.Rules)
}

// mutate admits obj (CREATE, in namespace default) and returns the result.
func mutate(t testing.TB, snap *engine.Snapshot, obj map[string]any) any {
	t.Helper()
	d, err := engine.New(engine.Options{}).Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Namespace: "default", Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range d.Errors {
		t.Errorf("rule error: %v", e)
	}
	return d.Object
}

func yamlObject(t testing.TB, text string) map[string]any {
	t.Helper()
	return manifests(t, text)[0].Object
}

// TestLibraryMutators applies the mutators of Gatekeeper's library
// (mutation/) to its examples, with the results Gatekeeper gives (its
// mutation system's rules; each want is the example with what the
// mutators add).
func TestLibraryMutators(t *testing.T) {
	dir := filepath.Join(testtool.ConformanceDir(t, "gatekeeper-library", "MODWRIGHT_GATEKEEPER_LIBRARY_DIR", "mutation"), "mutation", "pod-security-policy")
	read := func(paths ...string) []source.Document {
		for i, p := range paths {
			paths[i] = filepath.Join(dir, p)
		}
		docs, err := source.ReadPaths(paths, nil)
		if err != nil {
			t.Fatal(err)
		}
		return docs
	}
	for _, tc := range []struct {
		name      string
		mutators  []string
		example   string
		wantAdded string // the example's spec with what the mutators add, as YAML
	}{
		{"allow-privilege-escalation", []string{"allow-privilege-escalation/samples/mutation.yaml"}, "allow-privilege-escalation/samples/default-allow-privilege-escalation/example.yaml",
			"containers: [{name: nginx, image: nginx, securityContext: {allowPrivilegeEscalation: false}}]"},
		{"capabilities (Assign)", []string{"capabilities/samples/mutation-assign.yaml"}, "capabilities/samples/default-add-capabilities/example.yaml",
			"containers: [{name: nginx, image: nginx, securityContext: {capabilities: {add: [NEW_CAPABILITY]}}}]"},
		{"capabilities (ModifySet)", []string{"capabilities/samples/mutation-modifyset.yaml"}, "capabilities/samples/default-add-capabilities/example.yaml",
			"containers: [{name: nginx, image: nginx, securityContext: {capabilities: {add: [NEW_CAPABILITY]}}}]"},
		{"read-only-root-filesystem", []string{"read-only-root-filesystem/samples/mutation.yaml"}, "read-only-root-filesystem/samples/read-only-root-filesystem/example.yaml",
			"containers: [{name: nginx, image: nginx, securityContext: {readOnlyRootFilesystem: true}}]"},
		{"seccomp", []string{"seccomp/samples/mutation.yaml"}, "seccomp/samples/default-seccomp/example.yaml",
			"{securityContext: {seccompProfile: {type: RuntimeDefault}}, containers: [{name: nginx, image: nginx}]}"},
		{"selinux", []string{"selinux/samples/mutation.yaml"}, "selinux/samples/default-selinux/example.yaml",
			`containers: [{name: nginx, image: nginx, securityContext: {seLinuxOptions: {level: "s1:c234,c567", role: sysadm_r, type: svirt_lxc_net_t, user: sysadm_u}}}]`},
		{"users", []string{"users/samples/mutation-fsGroup.yaml", "users/samples/mutation-mustRunAsNonRoot.yaml", "users/samples/mutation-runAsGroup.yaml", "users/samples/mutation-runAsUser.yaml", "users/samples/mutation-supplementalGroups.yaml"},
			"users/samples/users/example.yaml",
			"{securityContext: {fsGroup: 3000, supplementalGroups: [3000]}, containers: [{name: nginx, image: nginx, securityContext: {runAsGroup: 2000, runAsNonRoot: true, runAsUser: 1000}}]}"},
		{"users, set already", []string{"users/samples/mutation-mustRunAsNonRoot.yaml", "users/samples/mutation-runAsUser.yaml"},
			"users/samples/users/example-nomutation.yaml", ""},
		{"users, the others on a root Pod", []string{"users/samples/mutation-fsGroup.yaml", "users/samples/mutation-runAsGroup.yaml", "users/samples/mutation-supplementalGroups.yaml", "users/samples/mutation-mustRunAsNonRoot.yaml", "users/samples/mutation-runAsUser.yaml"},
			"users/samples/users/example-nomutation.yaml",
			"{securityContext: {fsGroup: 3000, supplementalGroups: [3000]}, containers: [{name: nginx, image: nginx, securityContext: {runAsUser: 0, runAsNonRoot: false, runAsGroup: 2000}}]}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := mutators(t, read(tc.mutators...))
			obj := read(tc.example)[0].Object
			want := value.DeepCopy(obj).(map[string]any)
			if tc.wantAdded != "" {
				spec, err := value.Decode(yamlJSON(t, tc.wantAdded))
				if err != nil {
					t.Fatal(err)
				}
				want["spec"] = spec
			}
			if diff := cmp.Diff(want, mutate(t, snap, obj)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func yamlJSON(t testing.TB, text string) []byte {
	t.Helper()
	if !strings.HasPrefix(text, "{") {
		text = "{" + text + "}"
	}
	docs, err := source.ParseManifest("want.yaml", []byte("apiVersion: v1\nkind: X\nmetadata: {name: x}\nspec: "+text+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := value.AppendJSON(nil, docs[0].Object["spec"])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const deploy = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, labels: {app: web}}
spec:
  template:
    spec:
      containers:
      - {name: app, image: "nginx:1.25", ports: [{containerPort: 80}]}
      - {name: sidecar, image: "registry.example.com:5000/team/proxy@sha256:0123456789abcdef0123456789abcdef"}
`

// TestMutatorSemantics: Gatekeeper's mutation rules, one by one.
func TestMutatorSemantics(t *testing.T) {
	m := func(kind, spec string) string {
		return "apiVersion: mutations.gatekeeper.sh/v1\nkind: " + kind + "\nmetadata: {name: m}\nspec:\n" + spec + "\n"
	}
	const apps = "  applyTo: [{groups: [apps], versions: [v1], kinds: [Deployment]}]\n"
	for _, tc := range []struct {
		name, mutator string
		want          map[string]any // fields expected at paths (dotted, [i] for lists)
		absent        []string
	}{
		{name: "a keyed element is created with its key", mutator: m("Assign", apps+`  location: "spec.template.spec.containers[name: init].image"
  parameters: {assign: {value: busybox}}`), want: map[string]any{"spec.template.spec.containers[2]": map[string]any{"name": "init", "image": "busybox"}}},
		{name: "a glob touches every existing element, a MustNotExist test keeps what is there", mutator: m("Assign", apps+`  location: "spec.template.spec.containers[name: *].imagePullPolicy"
  parameters: {assign: {value: Always}, pathTests: [{subPath: "spec.template.spec.containers[name: *].imagePullPolicy", condition: MustNotExist}]}`),
			want: map[string]any{"spec.template.spec.containers[0].imagePullPolicy": "Always", "spec.template.spec.containers[1].imagePullPolicy": "Always"}},
		{name: "an integer key matches integers", mutator: m("Assign", apps+`  location: "spec.template.spec.containers[name: app].ports[containerPort: 80].protocol"
  parameters: {assign: {value: TCP}}`), want: map[string]any{"spec.template.spec.containers[0].ports[0].protocol": "TCP"}},
		{name: "MustExist on a parent creates nothing", mutator: m("Assign", apps+`  location: "spec.template.spec.securityContext.runAsNonRoot"
  parameters: {assign: {value: true}, pathTests: [{subPath: spec.template.spec.securityContext, condition: MustExist}]}`), absent: []string{"spec.template.spec.securityContext"}},
		{name: "fromMetadata", mutator: m("Assign", apps+`  location: "spec.template.metadata.labels.owner"
  parameters: {assign: {fromMetadata: {field: namespace}}}`), want: map[string]any{"spec.template.metadata.labels.owner": "default"}},
		{name: "AssignMetadata adds", mutator: m("AssignMetadata", `  location: "metadata.labels.team"
  parameters: {assign: {value: shop}}`), want: map[string]any{"metadata.labels.team": "shop", "metadata.labels.app": "web"}},
		{name: "AssignMetadata never changes", mutator: m("AssignMetadata", `  location: "metadata.labels.app"
  parameters: {assign: {value: other}}`), want: map[string]any{"metadata.labels.app": "web"}},
		{name: "ModifySet merge appends what is missing", mutator: m("ModifySet", apps+`  location: "spec.template.spec.containers[name: app].args"
  parameters: {values: {fromList: [--a, --b, --a]}}`), want: map[string]any{"spec.template.spec.containers[0].args": []any{"--a", "--b", "--a"}}},
		{name: "ModifySet prune", mutator: m("ModifySet", apps+`  location: "spec.template.spec.containers[name: app].ports"
  parameters: {operation: prune, values: {fromList: [{containerPort: 80}]}}`), want: map[string]any{"spec.template.spec.containers[0].ports": []any{}}},
		{name: "AssignImage: a domain", mutator: m("AssignImage", apps+`  location: "spec.template.spec.containers[name: *].image"
  parameters: {assignDomain: mirror.example.com}`), want: map[string]any{"spec.template.spec.containers[0].image": "mirror.example.com/nginx:1.25",
			"spec.template.spec.containers[1].image": "mirror.example.com/team/proxy@sha256:0123456789abcdef0123456789abcdef"}},
		{name: "AssignImage: a tag", mutator: m("AssignImage", apps+`  location: "spec.template.spec.containers[name: app].image"
  parameters: {assignTag: ":1.26"}`), want: map[string]any{"spec.template.spec.containers[0].image": "nginx:1.26"}},
		{name: "applyTo another kind", mutator: m("Assign", "  applyTo: [{groups: [''], versions: [v1], kinds: [Pod]}]\n"+`  location: "spec.x"
  parameters: {assign: {value: 1}}`), absent: []string{"spec.x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := mutators(t, manifests(t, tc.mutator))
			got := mutate(t, snap, yamlObject(t, deploy))
			for path, want := range tc.want {
				v, ok := at(got, path)
				if !ok || !value.Equal(v, want) {
					t.Errorf("%s: got %v (%v), want %v", path, v, ok, want)
				}
			}
			for _, path := range tc.absent {
				if v, ok := at(got, path); ok {
					t.Errorf("%s: got %v, want it absent", path, v)
				}
			}
		})
	}
}

// at reads a dotted path with [i] list indices.
func at(v any, path string) (any, bool) {
	for _, part := range strings.Split(path, ".") {
		name, idx, hasIdx := strings.Cut(part, "[")
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[name]; !ok {
			return nil, false
		}
		if hasIdx {
			i := 0
			for _, c := range strings.TrimSuffix(idx, "]") {
				i = i*10 + int(c-'0')
			}
			l, ok := v.([]any)
			if !ok || i >= len(l) {
				return nil, false
			}
			v = l[i]
		}
	}
	return v, true
}

func TestMutatorErrors(t *testing.T) {
	m := func(kind, spec string) string {
		return "apiVersion: mutations.gatekeeper.sh/v1\nkind: " + kind + "\nmetadata: {name: m}\nspec:\n" + spec + "\n"
	}
	const apps = "  applyTo: [{groups: [apps], versions: [v1], kinds: [Deployment]}]\n"
	for _, tc := range []struct{ name, text, want string }{
		{"metadata through Assign", m("Assign", apps+"  location: metadata.labels.x\n  parameters: {assign: {value: y}}"), "cannot change metadata"},
		{"no applyTo", m("Assign", "  location: spec.x\n  parameters: {assign: {value: y}}"), "needs applyTo"},
		{"two values", m("Assign", apps+"  location: spec.x\n  parameters: {assign: {value: y, fromMetadata: {field: name}}}"), "must only set one of"},
		{"the key of a list", m("Assign", apps+"  location: \"spec.c[name: a].name\"\n  parameters: {assign: {value: b}}"), "the key of the list"},
		{"a bad location", m("Assign", apps+"  location: \"spec.c[name\"\n  parameters: {assign: {value: b}}"), "spec.location"},
		{"AssignMetadata elsewhere", m("AssignMetadata", "  location: spec.x\n  parameters: {assign: {value: y}}"), "metadata.labels.<key> or metadata.annotations.<key>"},
		{"AssignMetadata, not a string", m("AssignMetadata", "  location: metadata.labels.x\n  parameters: {assign: {value: 1}}"), "must be a string"},
		{"pathTests not a prefix", m("Assign", apps+"  location: spec.x\n  parameters: {assign: {value: 1}, pathTests: [{subPath: spec.y, condition: MustExist}]}"), "not a prefix"},
		{"pathTests order", m("Assign", apps+"  location: spec.x.y\n  parameters: {assign: {value: 1}, pathTests: [{subPath: spec.x.y, condition: MustNotExist}, {subPath: spec.x, condition: MustExist}]}"), "MustExist after a test marked MustNotExist"},
		{"AssignImage domain", m("AssignImage", apps+"  location: spec.image\n  parameters: {assignDomain: nodot}"), "not a registry domain"},
		{"AssignImage path with a domain", m("AssignImage", apps+"  location: spec.image\n  parameters: {assignPath: gcr.io/x}"), "begins with a domain"},
		{"ModifySet operation", m("ModifySet", apps+"  location: spec.args\n  parameters: {operation: add, values: {fromList: [a]}}"), "must be merge or prune"},
		{"assignIf", m("Assign", apps+"  location: spec.x\n  parameters: {assign: {value: 1}, assignIf: {in: [1]}}"), "assignIf was removed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := source.LoadRules(manifests(t, tc.text), kinds.NewRegistry(gatekeeper.NewMutatorKinds()...))
			if len(res.Errors) == 0 || !strings.Contains(errors.Join(res.Errors...).Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", res.Errors, tc.want)
			}
		})
	}
}

// TestMutatorsConverge: the mutators run again until the object stops
// changing, as Gatekeeper's mutation system does: "a" acts on the
// container "b" creates, in the second pass.
func TestMutatorsConverge(t *testing.T) {
	snap := mutators(t, manifests(t, `
apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: a}
spec:
  applyTo: [{groups: [""], kinds: [Pod], versions: [v1]}]
  location: "spec.containers[name: sidecar].imagePullPolicy"
  parameters:
    pathTests: [{subPath: "spec.containers[name: sidecar]", condition: MustExist}]
    assign: {value: Always}
---
apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: b}
spec:
  applyTo: [{groups: [""], kinds: [Pod], versions: [v1]}]
  location: "spec.containers[name: sidecar].image"
  parameters:
    assign: {value: "proxy:1"}
`))
	got := mutate(t, snap, yamlObject(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec: {containers: [{name: app, image: nginx}]}\n"))
	want := yamlObject(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec: {containers: [{name: app, image: nginx}, {name: sidecar, image: 'proxy:1', imagePullPolicy: Always}]}\n")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
