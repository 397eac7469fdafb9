package gatekeeper_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/kinds/gatekeeper"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
)

const template = `
apiVersion: templates.gatekeeper.sh/v1
kind: ConstraintTemplate
metadata: {name: k8srequiredlabels}
spec:
  crd:
    spec:
      names: {kind: K8sRequiredLabels}
      validation:
        openAPIV3Schema:
          type: object
          properties:
            labels: {type: array, items: {type: string}}
            mode: {type: string, default: strict}
  targets:
  - target: admission.k8s.gatekeeper.sh
    libs:
    - |
      package lib.helpers
      missing(obj, l) { not obj.metadata.labels[l] }
    rego: |
      package k8srequiredlabels
      import data.lib.helpers.missing
      violation[{"msg": msg, "details": {"missing": l}}] {
        l := input.parameters.labels[_]
        missing(input.review.object, l)
        msg := sprintf("you must provide label <%v> (%v)", [l, input.parameters.mode])
      }
`

func manifests(t testing.TB, text string) []source.Document {
	t.Helper()
	docs, err := source.ParseManifest("test.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// load loads the rules of text (none when it does not parse).
func load(t testing.TB, text string) source.LoadResult {
	t.Helper()
	docs, err := source.ParseManifest("test.yaml", []byte(text))
	if err != nil {
		return source.LoadResult{Errors: []error{err}}
	}
	return source.LoadRules(docs, kinds.NewRegistry(append([]kinds.Kind{gatekeeper.NewKind()}, gatekeeper.NewMutatorKinds()...)...))
}

func snapshot(t testing.TB, text string) *engine.Snapshot {
	t.Helper()
	res := load(t, text)
	if len(res.Errors) > 0 {
		t.Fatal(errors.Join(res.Errors...))
	}
	return engineSnapshot(res)
}

func engineSnapshot(res source.LoadResult) *engine.Snapshot { return engine.NewSnapshot(res.Rules) }

// reviewText reviews the object of text (nil when it is not one).
func reviewText(snap *engine.Snapshot, text string) *engine.Decision {
	docs, err := source.ParseManifest("obj.yaml", []byte(text))
	if err != nil || len(docs) == 0 {
		return nil
	}
	d, _ := engine.New(engine.Options{}).Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Namespace: docs[0].Namespace(), Object: docs[0].Object})
	return d
}

// objects is an ObjectReader and InventoryReader of fixed objects.
type objects []map[string]any

func (o objects) Get(_ context.Context, ref engine.ObjectRef) (map[string]any, error) {
	for _, obj := range o {
		md, _ := obj["metadata"].(map[string]any)
		if obj["kind"] == ref.Kind && md["name"] == ref.Name && (md["namespace"] == nil && ref.Namespace == "" || md["namespace"] == ref.Namespace) {
			return obj, nil
		}
	}
	return nil, nil
}

func (o objects) Inventory(context.Context) (uint64, []map[string]any, error) { return 1, o, nil }

func review(t testing.TB, snap *engine.Snapshot, ctx objects, obj string) *engine.Decision {
	t.Helper()
	o := manifests(t, obj)[0].Object
	md, _ := o["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	opts := engine.Options{}
	if ctx != nil {
		opts.Objects, opts.Inventory = ctx, ctx
	}
	d, err := engine.New(opts).Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Namespace: ns, Object: o})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func violations(d *engine.Decision) []string {
	var out []string
	for _, tr := range d.Trace {
		for _, v := range gatekeeper.ViolationsOf(tr.Detail) {
			out = append(out, v.Msg)
		}
	}
	return out
}

func TestConstraint(t *testing.T) {
	const pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team-a, labels: {app: web}}\n"
	for _, tc := range []struct {
		name, constraint string
		want             []string // violations
		rejected, warned []string
	}{{
		name:       "deny, parameters defaulted by the schema",
		constraint: "spec: {parameters: {labels: [app, owner]}}",
		want:       []string{"you must provide label <owner> (strict)"},
		rejected:   []string{"[need] you must provide label <owner> (strict)"},
	}, {
		name:       "warn",
		constraint: "spec: {enforcementAction: warn, parameters: {labels: [owner], mode: loose}}",
		want:       []string{"you must provide label <owner> (loose)"},
		warned:     []string{"[need] you must provide label <owner> (loose)"},
	}, {
		name:       "dryrun: recorded, neither denied nor warned",
		constraint: "spec: {enforcementAction: dryrun, parameters: {labels: [owner]}}",
		want:       []string{"you must provide label <owner> (strict)"},
	}, {
		name: "scoped to the webhook as warn",
		constraint: `spec:
  enforcementAction: scoped
  scopedEnforcementActions: [{action: warn, enforcementPoints: [{name: validation.gatekeeper.sh}]}, {action: deny, enforcementPoints: [{name: audit.gatekeeper.sh}]}]
  parameters: {labels: [owner]}`,
		want:   []string{"you must provide label <owner> (strict)"},
		warned: []string{"[need] you must provide label <owner> (strict)"},
	}, {
		name:       "no violation",
		constraint: "spec: {parameters: {labels: [app]}}",
	}, {
		name:       "other kinds do not match",
		constraint: "spec: {match: {kinds: [{apiGroups: [apps], kinds: [Deployment]}]}, parameters: {labels: [owner]}}",
	}, {
		name:       "excluded namespace glob",
		constraint: "spec: {match: {excludedNamespaces: ['team-*']}, parameters: {labels: [owner]}}",
	}, {
		name:       "a namespaceSelector on an unknown Namespace: Gatekeeper's autoreject",
		constraint: "spec: {match: {namespaceSelector: {matchLabels: {env: prod}}}, parameters: {labels: [owner]}}",
		want:       []string{"unable to match constraints: error matching the requested object: p :failed to run Match criteria: namespace selector for namespace-scoped object but missing Namespace"},
		rejected:   []string{"[need] unable to match constraints: error matching the requested object: p :failed to run Match criteria: namespace selector for namespace-scoped object but missing Namespace"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshot(t, template+"---\napiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K8sRequiredLabels\nmetadata: {name: need}\n"+tc.constraint+"\n")
			d := review(t, snap, nil, pod)
			var rejected, warned []string
			for _, r := range d.Rejections {
				rejected = append(rejected, r.Message)
			}
			for _, w := range d.Warnings {
				warned = append(warned, w.Message)
			}
			if diff := cmp.Diff(tc.want, violations(d)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.rejected, rejected); diff != "" {
				t.Errorf("rejections (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.warned, warned); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNamespaceSelector(t *testing.T) {
	snap := snapshot(t, template+`---
apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sRequiredLabels
metadata: {name: need}
spec: {match: {namespaceSelector: {matchLabels: {env: prod}}}, parameters: {labels: [owner]}}
`)
	ns := func(env string) objects {
		return objects{{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-a", "labels": map[string]any{"env": env}}}}
	}
	const pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team-a}\n"
	if got := violations(review(t, snap, ns("prod"), pod)); len(got) != 1 {
		t.Errorf("in a prod namespace: got %q, want one violation", got)
	}
	if got := violations(review(t, snap, ns("dev"), pod)); len(got) != 0 {
		t.Errorf("in a dev namespace: got %q, want none", got)
	}
	// A Namespace is matched by its own labels.
	if got := violations(review(t, snap, nil, "apiVersion: v1\nkind: Namespace\nmetadata: {name: x, labels: {env: prod}}\n")); len(got) != 1 {
		t.Errorf("a prod Namespace: got %q, want one violation", got)
	}
}

func TestInventory(t *testing.T) {
	snap := snapshot(t, `
apiVersion: templates.gatekeeper.sh/v1
kind: ConstraintTemplate
metadata: {name: k8suniquename}
spec:
  crd: {spec: {names: {kind: K8sUniqueName}}}
  targets:
  - target: admission.k8s.gatekeeper.sh
    rego: |
      package k8suniquename
      violation[{"msg": msg}] {
        other := data.inventory.namespace[ns][_]["Service"][_]
        other.spec.clusterIP == input.review.object.spec.clusterIP
        ns != input.review.object.metadata.namespace
        msg := sprintf("clusterIP %v is used in %v", [other.spec.clusterIP, ns])
      }
---
apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sUniqueName
metadata: {name: unique}
`)
	inv := objects{{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s", "namespace": "b"}, "spec": map[string]any{"clusterIP": "10.0.0.1"}}}
	const svc = "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: a}\nspec: {clusterIP: 10.0.0.1}\n"
	if diff := cmp.Diff([]string{"clusterIP 10.0.0.1 is used in b"}, violations(review(t, snap, inv, svc))); diff != "" {
		t.Errorf("with the inventory (-want +got):\n%s", diff)
	}
	if got := violations(review(t, snap, nil, svc)); len(got) != 0 {
		t.Errorf("without an inventory: got %q", got)
	}
}

func TestEvalErrorIsViolation(t *testing.T) {
	snap := snapshot(t, `
apiVersion: templates.gatekeeper.sh/v1
kind: ConstraintTemplate
metadata: {name: k8sconflict}
spec:
  crd: {spec: {names: {kind: K8sConflict}}}
  targets:
  - target: admission.k8s.gatekeeper.sh
    rego: |
      package k8sconflict
      x = 1 { true }
      x = 2 { true }
      violation[{"msg": "never"}] { x == 3 }
---
apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sConflict
metadata: {name: c}
`)
	got := violations(review(t, snap, nil, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: a}\n"))
	if len(got) != 1 || !strings.Contains(got[0], "conflict") {
		t.Errorf("got %q, want one violation naming the conflict", got)
	}
}

func TestCompileErrors(t *testing.T) {
	constraint := func(spec string) string {
		return template + "---\napiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K8sRequiredLabels\nmetadata: {name: need}\n" + spec + "\n"
	}
	tmpl := func(name, kind, rego string) string {
		return "apiVersion: templates.gatekeeper.sh/v1\nkind: ConstraintTemplate\nmetadata: {name: " + name + "}\nspec:\n  crd: {spec: {names: {kind: " + kind + "}}}\n  targets:\n  - target: admission.k8s.gatekeeper.sh\n    rego: |\n" + indent(rego) + "\n"
	}
	for _, tc := range []struct {
		name, text string
		want       []string // substrings, one per error in order
	}{
		{"name and kind differ", tmpl("other", "K8sX", "package x\nviolation[{\"msg\": \"m\"}] { true }"), []string{`metadata.name: must be "k8sx"`}},
		{"no violation rule", tmpl("k8sx", "K8sX", "package x\ndeny[{\"msg\": \"m\"}] { true }"), []string{"missing required rule: violation"}},
		{"a syntax error, positioned", tmpl("k8sx", "K8sX", "package x\nviolation[{\"msg\": \"m\"}] { true "), []string{"spec.targets[0].rego: column"}},
		{"data outside lib and inventory", tmpl("k8sx", "K8sX", "package x\nviolation[{\"msg\": \"m\"}] { data.secrets.x }"), []string{"disallowed reference data.secrets.x"}},
		{"an import of input", tmpl("k8sx", "K8sX", "package x\nimport input.review\nviolation[{\"msg\": \"m\"}] { review }"), []string{"invalid import input.review"}},
		{"no template", "apiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K8sNone\nmetadata: {name: c}\n", []string{"no ConstraintTemplate defines kind K8sNone"}},
		{"parameters against the schema", constraint("spec: {parameters: {labels: app}}"), []string{"spec.parameters.labels"}},
		{"unknown parameters", constraint("spec: {parameters: {color: red}}"), []string{"spec.parameters.color: unknown field"}},
		{"unknown match field", constraint("spec: {match: {kind: [Pod]}}"), []string{"unknown field"}},
		{"enforcementAction", constraint("spec: {enforcementAction: block}"), []string{`must be deny, dryrun, warn or scoped, not "block"`}},
		{"scoped needs its actions", constraint("spec: {enforcementAction: scoped}"), []string{"needs scopedEnforcementActions"}},
		{"bad glob", constraint("spec: {match: {namespaces: ['a*b']}}"), []string{"spec.match.namespaces[0]"}},
		{"v1 is not served", strings.Replace(constraint("spec: {}"), "constraints.gatekeeper.sh/v1beta1", "constraints.gatekeeper.sh/v1", 1), []string{"apiVersion: constraints.gatekeeper.sh/v1 is not served"}},
		{"two templates of one kind", template + "---\n" + template, []string{"kind K8sRequiredLabels is defined by template k8srequiredlabels already"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := load(t, tc.text)
			if len(res.Errors) != len(tc.want) {
				t.Fatalf("got %d errors, want %d: %v", len(res.Errors), len(tc.want), errors.Join(res.Errors...))
			}
			for i, err := range res.Errors {
				if !strings.Contains(err.Error(), tc.want[i]) {
					t.Errorf("error %d: %v\nwant it to contain %q", i, err, tc.want[i])
				}
				if !errors.Is(err, rules.ErrInvalidRule) {
					t.Errorf("error %d is not ErrInvalidRule: %v", i, err)
				}
			}
			// A broken constraint is kept, with its error, and never applies.
			for _, r := range res.Rules {
				if r.Info().Err == nil {
					continue
				}
				if ks := r.Info().Index.Kinds; ks == nil || len(ks) != 0 {
					t.Errorf("broken rule %s is indexed to apply", r.Info().Key)
				}
			}
		})
	}
}

func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = "      " + l
	}
	return strings.Join(lines, "\n")
}

const celTemplate = `
apiVersion: templates.gatekeeper.sh/v1
kind: ConstraintTemplate
metadata: {name: k8smaxreplicas}
spec:
  crd:
    spec:
      names: {kind: K8sMaxReplicas}
      validation:
        openAPIV3Schema:
          type: object
          properties:
            max: {type: integer}
  targets:
  - target: admission.k8s.gatekeeper.sh
    code:
    - engine: K8sNativeValidation
      source:
        failurePolicy: FAILURE_POLICY
        matchCondition:
        - name: not-system
          expression: '!variables.anyObject.metadata.name.startsWith("system-")'
        variables:
        - name: replicas
          expression: 'has(variables.anyObject.spec.replicas) ? variables.anyObject.spec.replicas : 1'
        - name: broken
          expression: 'variables.anyObject.spec.nothing.here'
        validations:
        - expression: 'variables.replicas <= variables.params.max'
          messageExpression: '"replicas " + string(variables.replicas) + " above " + string(variables.params.max)'
        - expression: 'variables.replicas != 7'
        - expression: 'variables.replicas != 13 || variables.broken == 1'
    - engine: Rego
      source:
        rego: |
          package k8smaxreplicas
          violation[{"msg": "the Rego ran"}] { true }
---
apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sMaxReplicas
metadata: {name: max}
spec: {parameters: {max: 5}}
`

// TestCEL: a template with K8sNativeValidation runs it (not its Rego), as
// a ValidatingAdmissionPolicy whose params are the constraint.
func TestCEL(t *testing.T) {
	deploy := func(name string, replicas int) string {
		return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: %s, namespace: a}\nspec: {replicas: %d}\n", name, replicas)
	}
	for _, tc := range []struct {
		name, policy, obj string
		want              []string
	}{
		{"within bounds", "Fail", deploy("web", 3), nil},
		{"messageExpression", "Fail", deploy("web", 6), []string{"replicas 6 above 5"}},
		{"no message: the expression", "Fail", deploy("web", 7), []string{"replicas 7 above 5", "failed expression: variables.replicas != 7"}},
		{"an unused broken variable is harmless; a used one fails closed", "Fail", deploy("web", 13), []string{"replicas 13 above 5", "expression 'variables.replicas != 13 || variables.broken == 1' resulted in error: variable broken: no such key: nothing"}},
		{"failurePolicy Ignore", "Ignore", deploy("web", 13), []string{"replicas 13 above 5"}},
		{"matchCondition", "Fail", deploy("system-web", 9), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshot(t, strings.Replace(celTemplate, "FAILURE_POLICY", tc.policy, 1))
			if diff := cmp.Diff(tc.want, violations(review(t, snap, nil, tc.obj))); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
	// A field Gatekeeper's source has not is refused, not ignored.
	res := load(t, strings.Replace(strings.Replace(celTemplate, "FAILURE_POLICY", "Fail", 1), "- expression: 'variables.replicas != 7'", "- expression: 'variables.replicas != 7'\n          reason: Forbidden", 1))
	if len(res.Errors) == 0 || !strings.Contains(res.Errors[0].Error(), `unknown field "reason"`) {
		t.Errorf("a validation's reason: got %v", res.Errors)
	}
	res = load(t, strings.Replace(strings.Replace(celTemplate, "FAILURE_POLICY", "Fail", 1), "name: broken", "name: params", 1))
	if len(res.Errors) == 0 || !strings.Contains(res.Errors[0].Error(), "params is Gatekeeper's own variable") {
		t.Errorf("a variable named params: got %v", res.Errors)
	}
}

// versioned is an InventoryReader whose objects change with its version.
type versioned struct {
	version uint64
	objs    []map[string]any
	reads   int
}

func (v *versioned) Inventory(context.Context) (uint64, []map[string]any, error) {
	v.reads++
	return v.version, v.objs, nil
}

// TestInventoryVersion: data.inventory is converted again only when the
// reader's version changes.
func TestInventoryVersion(t *testing.T) {
	snap := snapshot(t, `
apiVersion: templates.gatekeeper.sh/v1
kind: ConstraintTemplate
metadata: {name: k8scount}
spec:
  crd: {spec: {names: {kind: K8sCount}}}
  targets:
  - target: admission.k8s.gatekeeper.sh
    rego: |
      package k8scount
      violation[{"msg": msg}] {
        n := count(data.inventory.cluster["v1"]["Namespace"])
        msg := sprintf("%v namespaces", [n])
      }
---
apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sCount
metadata: {name: count}
`)
	nsObj := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}
	}
	inv := &versioned{version: 1, objs: []map[string]any{nsObj("a")}}
	run := func() []string {
		o := manifests(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: a}\n")[0].Object
		d, err := engine.New(engine.Options{Inventory: inv}).Evaluate(context.Background(), snap, engine.Request{Operation: rules.Create, Namespace: "a", Object: o})
		if err != nil {
			t.Fatal(err)
		}
		return violations(d)
	}
	if diff := cmp.Diff([]string{"1 namespaces"}, run()); diff != "" {
		t.Errorf("first (-want +got):\n%s", diff)
	}
	// The same version: the converted inventory is kept (a reader bumps
	// its version with every change).
	inv.objs = append(inv.objs, nsObj("b"))
	if diff := cmp.Diff([]string{"1 namespaces"}, run()); diff != "" {
		t.Errorf("same version (-want +got):\n%s", diff)
	}
	inv.version++
	if diff := cmp.Diff([]string{"2 namespaces"}, run()); diff != "" {
		t.Errorf("new version (-want +got):\n%s", diff)
	}
	if inv.reads != 3 {
		t.Errorf("the inventory was read %d times for 3 reviews, want 3", inv.reads)
	}
}

func TestSynced(t *testing.T) {
	k := gatekeeper.NewKind()
	for _, c := range []struct {
		name     string
		obj      string
		want     []kinds.SyncedKind
		excluded map[string]bool
	}{
		{"config", `
apiVersion: config.gatekeeper.sh/v1alpha1
kind: Config
metadata: {name: config, namespace: gatekeeper-system}
spec:
  sync:
    syncOnly:
    - {group: "", version: v1, kind: Namespace}
    - {group: networking.k8s.io, version: v1, kind: Ingress}
    - {group: "", kind: Pod}
  match:
  - {excludedNamespaces: ["kube-*", "*-system"], processes: ["*"]}
  - {excludedNamespaces: [audit-only], processes: [audit]}
  - {excludedNamespaces: [sync-only], processes: [sync, webhook]}
`, []kinds.SyncedKind{{Version: "v1", Kind: "Namespace"}, {Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}},
			map[string]bool{"sync kube-public": true, "sync gatekeeper-system": true, "sync sync-only": true, "sync audit-only": false, "sync default": false,
				"audit audit-only": true, "webhook audit-only": false, "webhook sync-only": true, "mutation-webhook kube-system": true, "mutation-webhook sync-only": false}},
		{"syncset", `
apiVersion: syncset.gatekeeper.sh/v1alpha1
kind: SyncSet
metadata: {name: s}
spec:
  gvks:
  - {group: apps, version: v1, kind: Deployment}
`, []kinds.SyncedKind{{Group: "apps", Version: "v1", Kind: "Deployment"}}, map[string]bool{"sync kube-system": false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, excluded := k.Synced(manifests(t, c.obj)[0].Object)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("kinds (-want +got):\n%s", diff)
			}
			for pns, want := range c.excluded {
				process, ns, _ := strings.Cut(pns, " ")
				if g := excluded != nil && excluded(process, ns); g != want {
					t.Errorf("excluded(%q, %q) = %v, want %v", process, ns, g, want)
				}
			}
		})
	}
}

// TestDefinitionStatus: a template's status as Gatekeeper writes it.
func TestDefinitionStatus(t *testing.T) {
	k := gatekeeper.NewKind()
	m := &manifests(t, "apiVersion: templates.gatekeeper.sh/v1\nkind: ConstraintTemplate\nmetadata: {name: t, uid: u-1, generation: 3}\n")[0]
	ce := &rules.CompileError{Kind: "ConstraintTemplate", Rule: "t", Errors: []rules.FieldError{{Field: "spec.targets[0].rego", Pos: 4, Msg: "rego_parse_error"}}}
	got := k.DefinitionStatus(m, "pod-a", ce, errors.New("forbidden"), false)
	want := map[string]any{"byPod": []any{map[string]any{
		"id": "pod-a", "observedGeneration": int64(3), "templateUID": "u-1", "operations": []any{"audit", "status", "webhook"},
		"errors": []any{
			map[string]any{"code": "ingest_error", "message": "column 5: rego_parse_error", "location": "spec.targets[0].rego"},
			map[string]any{"code": "create_error", "message": "forbidden"},
		},
	}}}
	if diff := cmp.Diff(asJSON(t, want), asJSON(t, got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	got = k.DefinitionStatus(m, "pod-a", nil, nil, true)
	if got["created"] != true {
		t.Errorf("created: %v", got)
	}
	if pod := got["byPod"].([]any)[0].(map[string]any); pod["errors"] != nil {
		t.Errorf("errors of a template that compiled: %v", pod["errors"])
	}

	// A constraint's.
	c := &manifests(t, "apiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K8sX\nmetadata: {name: c, uid: u-2, generation: 2}\n")[0]
	want = map[string]any{"byPod": []any{map[string]any{
		"id": "pod-a", "observedGeneration": 2, "constraintUID": "u-2", "operations": []any{"audit", "status", "webhook"}, "enforced": false,
		"errors": []any{map[string]any{"code": "constraint_error", "message": "column 5: rego_parse_error", "location": "spec.targets[0].rego"}},
	}}}
	if diff := cmp.Diff(asJSON(t, want), asJSON(t, k.RuleStatus(c, "pod-a", ce))); diff != "" {
		t.Errorf("constraint (-want +got):\n%s", diff)
	}
	if pod := k.RuleStatus(c, "pod-a", nil)["byPod"].([]any)[0].(map[string]any); pod["enforced"] != true || pod["errors"] != nil {
		t.Errorf("a constraint that compiled: %v", pod)
	}
}

// asJSON is v through JSON (numbers as float64).
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStatusViolation: an entry of a constraint's status.violations as
// Gatekeeper's audit writes it.
func TestStatusViolation(t *testing.T) {
	snap := snapshot(t, template+`
---
apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sRequiredLabels
metadata: {name: dry}
spec:
  enforcementAction: dryrun
  parameters: {labels: [owner]}
---
apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sRequiredLabels
metadata: {name: scoped}
spec:
  enforcementAction: scoped
  scopedEnforcementActions:
  - action: warn
    enforcementPoints: [{name: audit.gatekeeper.sh}]
  parameters: {labels: [owner]}
`)
	k := gatekeeper.NewKind()
	v := kinds.Violation{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", Message: "m"}
	for key, want := range map[string]map[string]any{
		"dry": {"message": "m", "group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop", "name": "web", "enforcementAction": "dryrun"},
		"scoped": {"message": "m", "group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop", "name": "web", "enforcementAction": "scoped",
			"enforcementActions": []any{"warn"}},
	} {
		if diff := cmp.Diff(want, k.StatusViolation(ruleByKey(t, snap, key), v)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", key, diff)
		}
	}
	got := k.StatusViolation(ruleByKey(t, snap, "dry"), kinds.Violation{APIVersion: "v1", Kind: "Namespace", Name: "n", Message: "m"})
	if got["group"] != "" || got["version"] != "v1" || got["namespace"] != nil {
		t.Errorf("a cluster-scoped object of the core group: %v", got)
	}
}

func ruleByKey(t *testing.T, snap *engine.Snapshot, key string) engine.Rule {
	t.Helper()
	for _, r := range snap.Rules() {
		if r.Info().Key == key {
			return r
		}
	}
	t.Fatalf("no rule %s", key)
	return nil
}

// exempting is an inventory reader that also says which namespaces
// Gatekeeper's Config exempts from a process, as the cluster's does.
type exempting map[string]string // process -> namespace

func (exempting) Inventory(context.Context) (uint64, []map[string]any, error) { return 1, nil, nil }
func (e exempting) Excluded(process, ns string) bool                          { return e[process] == ns }

// TestExemptions: the namespaces Gatekeeper's Config exempts from the
// webhook, the audit or the mutation webhook, and at admission those
// labeled admission.gatekeeper.sh/ignore, are left alone by the
// constraints and mutators of that process.
func TestExemptions(t *testing.T) {
	snap := snapshot(t, template+`
---
apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sRequiredLabels
metadata: {name: owner}
spec:
  parameters: {labels: [owner]}
---
apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata: {name: team}
spec:
  match: {scope: Namespaced}
  location: metadata.labels.team
  parameters: {assign: {value: platform}}
`)
	ex := exempting{"webhook": "kube-system", "audit": "legacy", "mutation-webhook": "kube-system"}
	ignored := objects{{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ignored",
		"labels": map[string]any{"admission.gatekeeper.sh/ignore": "yes"}}}}
	eval := func(ns, labels string, background bool) *engine.Decision {
		o := manifests(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: "+ns+", labels: "+labels+"}\n")[0].Object
		d, err := engine.New(engine.Options{Inventory: ex, Objects: ignored}).Evaluate(context.Background(), snap,
			engine.Request{Operation: rules.Create, Namespace: ns, Object: o, Background: background})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	run := func(ns string, background bool) ([]string, bool) {
		// The violations of an object without the label; the patch of
		// one with it (a denial patches nothing).
		obj, _ := eval(ns, "{owner: me}", background).Object.(map[string]any)
		md, _ := obj["metadata"].(map[string]any)
		labels, _ := md["labels"].(map[string]any)
		return violations(eval(ns, "{}", background)), labels["team"] == "platform"
	}
	for _, c := range []struct {
		ns         string
		background bool
		violations int
		patched    bool
	}{
		{"shop", false, 1, true},
		{"kube-system", false, 0, false},
		{"legacy", false, 1, true},
		{"legacy", true, 0, false},
		{"kube-system", true, 1, false},
		// Gatekeeper's ignore label on the namespace: not at admission,
		// audited.
		{"ignored", false, 0, false},
		{"ignored", true, 1, false},
	} {
		vs, patched := run(c.ns, c.background)
		if len(vs) != c.violations || (!c.background && patched != c.patched) {
			t.Errorf("%s (background %v): violations %q, patched %v; want %d violations, patched %v", c.ns, c.background, vs, patched, c.violations, c.patched)
		}
	}
}

// TestBounds: what one constraint says about one object is bounded: the
// first violations (a last one says how many more), each message cut.
func TestBounds(t *testing.T) {
	snap := snapshot(t, `
apiVersion: templates.gatekeeper.sh/v1
kind: ConstraintTemplate
metadata: {name: k8smany}
spec:
  crd: {spec: {names: {kind: K8sMany}}}
  targets:
  - target: admission.k8s.gatekeeper.sh
    rego: |
      package k8smany
      violation[{"msg": msg}] {
        i := numbers.range(1, 150)[_]
        msg := sprintf("%05000d", [i])
      }
---
apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sMany
metadata: {name: many}
`)
	d := review(t, snap, nil, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: a}\n")
	vs := violations(d)
	if len(vs) == 0 {
		t.Fatalf("no violations: errors %v", d.Errors)
	}
	if len(vs) != gatekeeper.MaxViolations || vs[len(vs)-1] != "and 51 more violations" {
		t.Fatalf("%d violations, the last %.40q", len(vs), vs[len(vs)-1])
	}
	for _, v := range vs[:len(vs)-1] {
		if len(v) > gatekeeper.MaxMessageBytes+len("... (cut at 4 KiB)") || !strings.HasSuffix(v, "... (cut at 4 KiB)") {
			t.Fatalf("a message of %d bytes: %.40q...", len(v), v)
		}
	}
}

// TestDefined: a template that does not compile still defines its kind
// (its constraints are kept, broken, not dropped) but gives no CRD.
func TestDefined(t *testing.T) {
	docs := manifests(t, template+`
---
apiVersion: templates.gatekeeper.sh/v1
kind: ConstraintTemplate
metadata: {name: k8sbroken}
spec:
  crd: {spec: {names: {kind: K8sBroken}}}
  targets: []
`)
	k, errs := gatekeeper.NewKind().WithDefinitions([]*kinds.Manifest{&docs[0], &docs[1]})
	if errs[0] != nil || errs[1] == nil {
		t.Fatalf("errors %v", errs)
	}
	var got []string
	for _, d := range k.(kinds.Defining).Defined() {
		got = append(got, fmt.Sprintf("%s by %s, CRD %v", d.Kind, d.By, d.CRD != nil))
	}
	if diff := cmp.Diff([]string{"K8sBroken by k8sbroken, CRD false", "K8sRequiredLabels by k8srequiredlabels, CRD true"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
