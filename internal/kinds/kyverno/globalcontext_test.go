package kyverno_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds/kyverno"
	"github.com/modwright/modwright/internal/rules"
)

// globals is a GlobalContextReader of fixed entries (projections as
// members of an entry's object value).
type globals map[string]any

func (g globals) GlobalContext(_ context.Context, name, projection string) (any, error) {
	v, ok := g[name]
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, engine.ErrNoGlobalContextEntry)
	}
	if projection == "" {
		return v, nil
	}
	m, _ := v.(map[string]any)
	p, ok := m[projection]
	if !ok {
		return nil, errors.New("no projection " + projection)
	}
	return p, nil
}

// TestGlobalReference: a globalReference context entry reads its entry
// (entry.projection, then its jmesPath); an entry not there fails the rule
// as Kyverno's "failed to fetch entry"; a namespaced Policy reads none,
// nor does a namespaced CEL policy's globalContext.Get, while a
// cluster-scoped one's reads the entry, null when it is not there.
func TestGlobalReference(t *testing.T) {
	snap := snapshot(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: cluster}
spec:
  validationFailureAction: Enforce
  rules:
  - name: registries
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    context:
    - name: allowed
      globalReference: {name: "{{ request.object.data.entry }}.hosts", jmesPath: "[?allowed].name"}
    validate:
      message: "{{ request.object.data.host }} is not one of {{ allowed | join(', ', @) }}"
      deny:
        conditions:
          all: [{key: "{{ request.object.data.host }}", operator: AnyNotIn, value: "{{ allowed }}"}]
---
apiVersion: kyverno.io/v1
kind: Policy
metadata: {name: namespaced, namespace: team-a}
spec:
  rules:
  - name: reads
    match: {any: [{resources: {kinds: [ConfigMap]}}]}
    context:
    - name: allowed
      globalReference: {name: registries}
    validate:
      deny:
        conditions:
          all: [{key: "{{ allowed }}", operator: Equals, value: none}]
---
apiVersion: policies.kyverno.io/v1
kind: NamespacedValidatingPolicy
metadata: {name: namespaced-cel, namespace: team-a}
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  validations:
  - expression: "globalContext.Get('registries', '') != null"
---
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: cluster-cel}
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  validations:
  - expression: "globalContext.Get('absent', '') == null && globalContext.Get('registries', 'hosts').size() == 2"
`)
	eng := engine.New(engine.Options{Globals: globals{"registries": map[string]any{"hosts": []any{
		map[string]any{"name": "registry.example.com", "allowed": true}, map[string]any{"name": "docker.io", "allowed": false},
	}}}})
	for _, tc := range []struct {
		entry, host string
		want        []string
	}{
		{"registries", "registry.example.com", []string{"registries: pass", "reads: error: ", "namespaced-cel: error: ", "cluster-cel: pass"}},
		{"registries", "docker.io", []string{"registries: fail: docker.io is not one of registry.example.com"}},
		{"absent", "docker.io", []string{"registries: error: ", "failed to fetch entry key=absent"}},
		// A name longer than an object's names no entry, and is not
		// echoed whole.
		{strings.Repeat("x", 300), "docker.io", []string{"registries: error: ", "failed to fetch entry key=" + strings.Repeat("x", 100)}},
	} {
		o := manifests(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: team-a}, data: {entry: `+tc.entry+`, host: `+tc.host+`}}`)[0].Object
		d, err := eng.Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Namespace: "team-a", Object: o})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tr := range d.Trace {
			name := tr.Rule
			for _, r := range kyverno.ResultsOf(tr.Detail) {
				if r.Rule != "" {
					name = r.Rule
				}
				got = append(got, name+": "+string(r.Status)+": "+r.Message)
			}
		}
		all := strings.Join(got, "\n")
		for _, w := range tc.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s %s: want %q in\n%s", tc.entry, tc.host, w, all)
			}
		}
		if len(tc.entry) > 253 && strings.Contains(all, strings.Repeat("x", 254)) {
			t.Errorf("a long entry name echoed whole:\n%s", all)
		}
		if tc.host == "registry.example.com" && strings.Count(all, "they hold data of the whole cluster") != 2 {
			t.Errorf("the namespaced policies' refusals:\n%s", all)
		}
	}
}

// imageUsers answers image data with the user each image runs as.
type imageUsers map[string]string

func (u imageUsers) ImageData(_ context.Context, ref string) (map[string]any, error) {
	user, ok := u[ref]
	if !ok {
		return nil, errors.New("no such image")
	}
	return map[string]any{"image": ref, "registry": "ghcr.io", "config": map[string]any{"config": map[string]any{"User": user}}}, nil
}

// TestImageRegistryEntry: an imageRegistry context entry reads the image
// through the engine's ImageReader, in Kyverno's shape (configData, not
// config), its JMESPath applied; an image the registry does not give is
// the rule's error; without a reader the entry is not loaded (offline: a
// value of the same name stands for it).
func TestImageRegistryEntry(t *testing.T) {
	snap := snapshot(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: image-user}
spec:
  validationFailureAction: Enforce
  rules:
  - name: non-root-image
    match: {any: [{resources: {kinds: [Pod]}}]}
    context:
    - name: imageUser
      imageRegistry:
        reference: "{{ request.object.spec.containers[0].image }}"
        jmesPath: "configData.config.User"
    validate:
      message: "the image runs as user {{ imageUser }}"
      deny:
        conditions:
          any:
          - {key: "{{ imageUser }}", operator: Equals, value: "0"}
`)
	eng := engine.New(engine.Options{Images: imageUsers{"ghcr.io/a/app:v1": "1000", "ghcr.io/a/root:v1": "0"}})
	for image, want := range map[string]string{
		"ghcr.io/a/app:v1":  "non-root-image=pass",
		"ghcr.io/a/root:v1": "non-root-image=fail: the image runs as user 0",
		"ghcr.io/a/gone:v1": "non-root-image=error: ",
		// A reference an object makes that long reaches no reader.
		"ghcr.io/" + strings.Repeat("a", 5000) + ":v1": "non-root-image=error: ",
	} {
		pod := manifests(t, `{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: a}, spec: {containers: [{name: c, image: `+image+`}]}}`)[0].Object
		d, err := eng.Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Namespace: "a", Object: pod})
		if err != nil && d == nil {
			t.Fatal(err)
		}
		var got []string
		for _, tr := range d.Trace {
			for _, r := range kyverno.ResultsOf(tr.Detail) {
				s := r.Rule + "=" + string(r.Status)
				if r.Status != kyverno.Pass {
					s += ": " + r.Message
				}
				got = append(got, s)
			}
		}
		if len(image) > 4096 && (len(got) != 1 || !strings.Contains(got[0], "an image reference of 5011 bytes (at most 4096)")) {
			t.Errorf("a long reference: results %q", got)
		}
		if len(got) != 1 || !strings.HasPrefix(got[0], want) {
			t.Errorf("%s: results %q, want %q", image, got, want)
		}
	}
}
