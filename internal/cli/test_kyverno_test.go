package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/suite"
)

// TestKyvernoRequester runs a suite whose policy reads the requester (its
// name, its cluster role, its group) and an apiCall answered by the
// suite's apiCallResponses: a row expecting the wrong result shows the
// message built from both (an unmatched rule would pass as Excluded).
func TestKyvernoRequester(t *testing.T) {
	kt, err := suite.LoadKyverno("../../testdata/cli/kyverno/requester/kyverno-test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kt.Results = []suite.KyvernoResult{
		{Policy: "deployer-limits", Rule: "replicas-within-quota", Resources: []string{"large"}, Result: "pass"},
		{Policy: "deployer-limits", Rule: "no-self-service-admins", Resources: []string{"small"}, Result: "fail"},
	}
	got, err := runKyvernoSuite(context.Background(), kt, &testOptions{}, Streams{Out: io.Discard, Err: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Want pass, got fail: jane@example.com may run at most 3 replicas in team-a",
		"Want fail, got pass",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Passed || !strings.Contains(got[i].Reason, w) {
			t.Errorf("row %d: reason %q, want it to contain %q", i, got[i].Reason, w)
		}
	}
}

// TestKyvernoSuiteRefused: a suite Kyverno's CLI would refuse, or using
// what modwright test does not run yet, exits 2 naming the field.
func TestKyvernoSuiteRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*suite.KyvernoTest)
		field string
	}{
		{"apiCallResponses without url", func(kt *suite.KyvernoTest) { kt.APICallResponses[0].URLPath = "" }, "apiCallResponses[0]: either url or urlPath is required"},
		{"apiCallResponses relative path", func(kt *suite.KyvernoTest) { kt.APICallResponses[0].URLPath = "api/v1" }, "must be an absolute path"},
		{"apiCallResponses both", func(kt *suite.KyvernoTest) { kt.APICallResponses[0].URL = "https://x.example" }, "mutually exclusive"},
		{"apiCallResponses PUT", func(kt *suite.KyvernoTest) { kt.APICallResponses[0].Method = "PUT" }, "must be GET or POST"},
		{"apiCallResponses list body", func(kt *suite.KyvernoTest) { kt.APICallResponses[0].Response.Body = []byte(`[1]`) }, "must be a JSON object"},
		{"apiCallResponses duplicate", func(kt *suite.KyvernoTest) {
			kt.APICallResponses = append(kt.APICallResponses, kt.APICallResponses[0])
		}, "apiCallResponses[1]: a second response"},
		{"userinfo of another kind", func(kt *suite.KyvernoTest) { kt.UserInfo = "resources.yaml" }, "userinfo: resources.yaml: want one cli.kyverno.io/v1alpha1 UserInfo document"},
		{"targetResources missing", func(kt *suite.KyvernoTest) { kt.TargetResources = []string{"absent.yaml"} }, "targetResources"},
		{"clusterResources missing", func(kt *suite.KyvernoTest) { kt.ClusterResources = []string{"absent.yaml"} }, "clusterResources"},
		{"context missing", func(kt *suite.KyvernoTest) { kt.Context = "absent.yaml" }, "context"},
		{"context of another kind", func(kt *suite.KyvernoTest) { kt.Context = "resources.yaml" }, "context: resources.yaml: want one cli.kyverno.io/v1alpha1 Context document"},
		{"globalContextEntries without a source", func(kt *suite.KyvernoTest) {
			kt.GlobalContextEntries = []suite.KyvernoGlobalContextEntry{{Name: "x"}}
		}, `globalContextEntries: entry "x": one of data, resources, or resourceFiles is required`},
		{"globalContextEntries twice", func(kt *suite.KyvernoTest) {
			e := suite.KyvernoGlobalContextEntry{Name: "x", Data: []byte(`{}`)}
			kt.GlobalContextEntries = []suite.KyvernoGlobalContextEntry{e, e}
		}, `globalContextEntries: duplicate name "x"`},
		{"globalContextEntries data and resources", func(kt *suite.KyvernoTest) {
			kt.GlobalContextEntries = []suite.KyvernoGlobalContextEntry{{Name: "x", Data: []byte(`{}`), Resources: []json.RawMessage{[]byte(`{}`)}}}
		}, "mutually exclusive"},
		{"globalContextEntries data a list", func(kt *suite.KyvernoTest) {
			kt.GlobalContextEntries = []suite.KyvernoGlobalContextEntry{{Name: "x", Data: []byte(`[1]`)}}
		}, "data must be a JSON object"},
		{"globalContextEntries file outside", func(kt *suite.KyvernoTest) {
			kt.GlobalContextEntries = []suite.KyvernoGlobalContextEntry{{Name: "x", ResourceFiles: []string{"../fail/resources.yaml"}}}
		}, "must not escape the test directory"},
		{"globalContextEntries file missing", func(kt *suite.KyvernoTest) {
			kt.GlobalContextEntries = []suite.KyvernoGlobalContextEntry{{Name: "x", ResourceFiles: []string{"absent.yaml"}}}
		}, `globalContextEntries: entry "x" resourceFiles`},
		{"globalContextEntries projection without path", func(kt *suite.KyvernoTest) {
			kt.GlobalContextEntries = []suite.KyvernoGlobalContextEntry{{Name: "x", Data: []byte(`{}`), Projections: []suite.KyvernoGlobalContextProjection{{Name: "p"}}}}
		}, `entry "x" projection "p": path is required`},
		{"globalContextEntries bad fieldPath", func(kt *suite.KyvernoTest) {
			kt.GlobalContextEntries = []suite.KyvernoGlobalContextEntry{{Name: "x", Data: []byte(`{}`), FieldPath: "a[["}}
		}, `entry "x": fieldPath "a[["`},
		{"paramResources missing", func(kt *suite.KyvernoTest) { kt.ParamResources = []string{"absent.yaml"} }, "paramResources: "},
		{"jsonPayloads missing", func(kt *suite.KyvernoTest) { kt.JSONPayloads = []string{"absent.json"} }, "jsonPayloads[0]: "},
		{"jsonPayloads not an object", func(kt *suite.KyvernoTest) {
			kt.JSONPayloads = []string{"../json-payloads/payloads/good.json", "../json-payloads/not-an-object.json"}
		}, "jsonPayloads[1]: " + "invalid manifest: ../../testdata/cli/kyverno/json-payloads/not-an-object.json: a payload is a top-level object, not a JSON array"},
		{"jsonPayloads of two documents", func(kt *suite.KyvernoTest) { kt.JSONPayloads = []string{"../json-payloads/policies.yaml"} }, "a payload is one document"},
		{"jsonPayloads with a comma", func(kt *suite.KyvernoTest) { kt.JSONPayloads = []string{"a,b.json"} }, `jsonPayloads[0]: "a,b.json": a payload's path holds no comma`},
		{"httpPayloads", func(kt *suite.KyvernoTest) { kt.HTTPPayloads = []string{"check.json"} }, "httpPayloads: check requests of Kyverno's authorization policies are not run"},
		{"envoyPayloads", func(kt *suite.KyvernoTest) { kt.EnvoyPayloads = []string{"check.json"} }, "envoyPayloads: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kt, err := suite.LoadKyverno("../../testdata/cli/kyverno/requester/kyverno-test.yaml")
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(kt)
			_, err = runKyvernoSuite(context.Background(), kt, &testOptions{}, Streams{Out: io.Discard, Err: io.Discard})
			var ee *ExitError
			if !errors.As(err, &ee) || ee.Code != 2 || !errors.Is(err, suite.ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("got %v, want an exit-2 error containing %q", err, tc.field)
			}
		})
	}
}

// TestKyvernoGlobalContext runs a suite whose policies read its
// globalContextEntries (a ClusterPolicy's globalReference, a
// ValidatingPolicy's globalContext.Get): a row expecting the wrong result
// shows the message built from the entry, and an entry the suite does not
// give is an error for a globalReference (as Kyverno: "failed to fetch
// entry") and null for CEL.
func TestKyvernoGlobalContext(t *testing.T) {
	load := func(t *testing.T) *suite.KyvernoTest {
		kt, err := suite.LoadKyverno("../../testdata/cli/kyverno/global-context/kyverno-test.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return kt
	}
	for _, tc := range []struct {
		name string
		edit func(*suite.KyvernoTest)
		row  suite.KyvernoResult
		want string
	}{
		{"projection", func(*suite.KyvernoTest) {},
			suite.KyvernoResult{Policy: "allowed-registries", Rule: "registries", Kind: "Pod", Resources: []string{"foreign"}, Result: "pass"},
			"Want pass, got fail: validation failure: images must come from registry.example.com"},
		{"fieldPath", func(*suite.KyvernoTest) {},
			suite.KyvernoResult{IsValidatingPolicy: true, Policy: "replica-ceiling", Kind: "Deployment", Resources: []string{"large"}, Result: "pass"},
			"Want pass, got fail: at most 10 replicas"},
		{"entry not given", func(kt *suite.KyvernoTest) { kt.GlobalContextEntries = kt.GlobalContextEntries[1:] },
			suite.KyvernoResult{Policy: "allowed-registries", Rule: "registries", Kind: "Pod", Resources: []string{"good"}, Result: "pass"},
			"failed to fetch entry key=registries"},
		{"projection not given", func(kt *suite.KyvernoTest) { kt.GlobalContextEntries[0].Projections[0].Name = "other" },
			suite.KyvernoResult{Policy: "allowed-registries", Rule: "registries", Kind: "Pod", Resources: []string{"good"}, Result: "pass"},
			`projection "allowed" not found in global context entry "registries"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kt := load(t)
			tc.edit(kt)
			kt.Results = []suite.KyvernoResult{tc.row}
			got, err := runKyvernoSuite(context.Background(), kt, &testOptions{}, Streams{Out: io.Discard, Err: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Passed || !strings.Contains(got[0].Reason, tc.want) {
				t.Fatalf("got %+v, want one failed row whose reason contains %q", got, tc.want)
			}
		})
	}
}

// TestContextGlobalContextEntries: GlobalContextEntry documents given with
// --context hold what the cluster's would: a kubernetesResource entry the
// context objects of its resource in its namespace, with its projections;
// an apiCall entry the recorded answer of its call.
func TestContextGlobalContextEntries(t *testing.T) {
	docs, err := source.ParseManifest("context.yaml", []byte(`
apiVersion: kyverno.io/v2
kind: GlobalContextEntry
metadata: {name: teams}
spec:
  kubernetesResource: {version: v1, resource: configmaps, namespace: platform}
  projections:
  - {name: names, jmesPath: "[].data.team | sort(@)"}
---
apiVersion: kyverno.io/v2
kind: GlobalContextEntry
metadata: {name: limits}
spec:
  apiCall: {urlPath: /api/v1/namespaces/config/configmaps/limits, refreshInterval: 1m}
---
apiVersion: kyverno.io/v2
kind: GlobalContextEntry
metadata: {name: external}
spec:
  apiCall: {service: {url: "https://x.example"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: platform}
data: {team: search}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b, namespace: platform}
data: {team: payments}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c, namespace: elsewhere}
data: {team: hidden}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: limits, namespace: config}
data: {max: "10"}
`))
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := newStaticResolver(docs)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if v, err := r.GlobalContext(ctx, "teams", "names"); err != nil || fmt.Sprint(v) != "[payments search]" {
		t.Errorf("teams.names = %v, %v", v, err)
	}
	if v, err := r.GlobalContext(ctx, "teams", ""); err != nil || len(v.([]any)) != 2 {
		t.Errorf("teams = %v, %v: want the 2 ConfigMaps of its namespace", v, err)
	}
	if v, err := r.GlobalContext(ctx, "limits", ""); err != nil || fmt.Sprint(v.(map[string]any)["data"]) != "map[max:10]" {
		t.Errorf("limits = %v, %v", v, err)
	}
	if _, err := r.GlobalContext(ctx, "external", ""); err == nil || !strings.Contains(err.Error(), "a service call is not answered offline") {
		t.Errorf("a service entry: %v", err)
	}
	if _, err := r.GlobalContext(ctx, "teams", "other"); err == nil || !strings.Contains(err.Error(), `no data for projection "other"`) {
		t.Errorf("a projection the entry has not: %v", err)
	}
	if _, err := r.GlobalContext(ctx, "absent", ""); !errors.Is(err, engine.ErrNoGlobalContextEntry) {
		t.Errorf("an entry not given: %v", err)
	}
}

// TestKyvernoRowsWithoutInput: a row with no resource or payload to
// compare with fails as not found (kyverno test prints nothing for it: a
// suite that checked nothing would pass).
func TestKyvernoRowsWithoutInput(t *testing.T) {
	kt, err := suite.LoadKyverno("../../testdata/cli/kyverno/json-payloads/kyverno-test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kt.Resources, kt.JSONPayloads = nil, nil
	got, err := runKyvernoSuite(context.Background(), kt, &testOptions{}, Streams{Out: io.Discard, Err: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(kt.Results) {
		t.Fatalf("%d results for %d rows", len(got), len(kt.Results))
	}
	for _, c := range got {
		if c.Passed || c.Reason != "Not found" {
			t.Errorf("%s: passed %v, reason %q", c.Case, c.Passed, c.Reason)
		}
	}
}
