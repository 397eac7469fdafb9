package cli

import (
	"bytes"
	"os/exec"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/modwright/modwright/deploy"
	cuelang "github.com/modwright/modwright/internal/lang/cue"
	"github.com/modwright/modwright/internal/testtool"
)

// calledPaths are the paths the webhook configurations among objs call.
func calledPaths(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, u := range objs {
		if k := u.GetKind(); k != "MutatingWebhookConfiguration" && k != "ValidatingWebhookConfiguration" {
			continue
		}
		hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
		for _, h := range hooks {
			path, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "service", "path")
			out = append(out, u.GetName()+" "+path)
		}
	}
	return out
}

// unserved are the calls among called (configuration and path) that the
// operator started with args does not serve.
func unserved(t *testing.T, args []string, called []string) []string {
	t.Helper()
	so := &serveOptions{}
	if err := newServeCmdWith(Streams{}, so).ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	served := operatorPaths(&so.operator, newClusterRegistry(so.clusterRules, clusterKinds{kinitiras: so.operator.kinitiras, kyverno: so.operator.kyverno, gatekeeper: so.operator.gatekeeper}, nil, nil, cuelang.Language{}))
	var out []string
	for _, c := range called {
		if i := bytes.LastIndexByte([]byte(c), ' '); !slices.Contains(served, c[i+1:]) {
			out = append(out, c)
		}
	}
	return out
}

// TestWebhooksServed: every webhook the bundle, the chart (with each
// switch that changes its webhooks) and the sandbox register calls a path
// the server they point at serves; a registered webhook that is not served
// fails every request it selects ("the server could not find the requested
// resource").
func TestWebhooksServed(t *testing.T) {
	bundle := bundleObjects(deploy.Bundle)
	if called := calledPaths(bundle); len(called) < 8 {
		t.Fatalf("the bundle calls %v; the test reads it wrong", called)
	}
	t.Run("bundle", func(t *testing.T) {
		if bad := unserved(t, bundleServeArgs(deploy.Bundle), calledPaths(bundle)); len(bad) > 0 {
			t.Errorf("registered, not served: %v", bad)
		}
	})
	t.Run("sandbox", func(t *testing.T) {
		// What runSandbox gives serve; it registers the bundle's webhooks.
		if bad := unserved(t, sandboxServeArgs(&sandboxOptions{logFormat: "text"}, 9443, 8081), calledPaths(bundle)); len(bad) > 0 {
			t.Errorf("registered, not served: %v", bad)
		}
	})
	t.Run("sandbox before the fix", func(t *testing.T) {
		// serve's defaults alone (kinitiras' own paths off), as the
		// sandbox ran it: kinitiras' /mutate and /validate go unserved.
		bad := unserved(t, nil, calledPaths(bundle))
		if len(bad) != 2 {
			t.Errorf("unserved with serve's defaults: %v, want kinitiras' two paths", bad)
		}
	})
	helm := testtool.Find(t, "helm")
	for _, set := range [][]string{nil, {"kinitiras.webhooks=false"}, {"kinitiras.enabled=false"}, {"nodeRef.enabled=false"}} {
		name := "chart defaults"
		if len(set) > 0 {
			name = "chart " + set[0]
		}
		t.Run(name, func(t *testing.T) {
			args := []string{"template", "modwright", "deploy/helm/modwright", "--namespace", "modwright-system"}
			for _, s := range set {
				args = append(args, "--set", s)
			}
			cmd := exec.Command(helm, args...)
			cmd.Dir = testtool.RepoRoot(t)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("helm %v: %v", args, err)
			}
			objs := bundleObjects(out)
			if bad := unserved(t, bundleServeArgs(out), calledPaths(objs)); len(bad) > 0 {
				t.Errorf("registered, not served: %v", bad)
			}
		})
	}
}
