package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/cli"
	"github.com/modwright/modwright/internal/translate"
)

// quotedMessages are the rules' messages in apply's denial text.
var quotedMessages = regexp.MustCompile(`: ("(?:[^"\\]|\\.)*")`)

// TestCompiledCorpus: every corpus case whose rules all translate
// (modwright compile) runs on the real kube-apiserver with the compiled
// policies installed, each case in its own namespace, and its answers are
// the rules' (modwright apply) on the same objects as the API server holds
// them (defaulted by a dry-run create first): admitted objects equal,
// refusals with the rule's message. Cases the API server cannot take as
// they are (kinds it does not serve, invalid objects, cluster-scoped
// objects, ClusterPolicies, cluster rules, UPDATE and DELETE) are counted,
// not compared.
func TestCompiledCorpus(t *testing.T) {
	cl := startCluster(t, false)
	ctx := context.Background()
	cfg := rest.CopyConfig(cl.cfg)
	cfg.QPS, cfg.Burst = 1e6, 1e6
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	resource := func(u *unstructured.Unstructured) (dynamic.ResourceInterface, bool, error) {
		m, err := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
		if err != nil {
			return nil, false, err
		}
		if m.Scope.Name() != meta.RESTScopeNameNamespace {
			return dyn.Resource(m.Resource), false, nil
		}
		return dyn.Resource(m.Resource).Namespace(u.GetNamespace()), true, nil
	}
	createNS := func(name string) {
		t.Helper()
		ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}}
		ri, _, err := resource(ns)
		if err == nil {
			_, err = ri.Create(ctx, ns, metav1.CreateOptions{})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	createNS("plain")

	type caseRun struct {
		name, ns string
		rules    string // the rules, their namespace the case's
		objects  []*unstructured.Unstructured
	}
	var runs []caseRun
	skipped := map[string]int{}
	files, err := filepath.Glob("../../testdata/cases/*/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	var policies []map[string]any
	for i, f := range files {
		a, err := txtar.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sec := map[string][]byte{}
		for _, af := range a.Files {
			sec[af.Name] = af.Data
		}
		name := strings.TrimSuffix(strings.TrimPrefix(f, "../../testdata/cases/"), ".txtar")
		ns := "c" + strconv.Itoa(i)
		why := ""
		switch {
		case len(sec["args"]) > 0:
			why = "flags (operations, old objects, rule packs...)"
		case len(sec["context.yaml"]) > 0:
			why = "context objects"
		case strings.TrimSpace(string(sec["exit"])) == "2":
			why = "the case exits 2"
		}
		var rules []translate.Rule
		var ruleDocs [][]byte
		if why == "" {
			for j, doc := range strings.Split(string(sec["rules.yaml"]), "\n---\n") {
				var m map[string]any
				if err := yaml.Unmarshal([]byte(doc), &m); err != nil || m == nil {
					why = "rules that do not parse"
					break
				}
				kind, _ := m["kind"].(string)
				md, _ := m["metadata"].(map[string]any)
				switch rns, _ := md["namespace"].(string); {
				case kind == "ClusterPolicy" || rns == "kubemod-system":
					why = "cluster-wide rules"
				case kind == "ModRule" || kind == "Policy":
					md["namespace"] = ns
				default:
					why = "a " + kind
				}
				rules = append(rules, translate.Rule{Kind: kind, Origin: fmt.Sprintf("%s, document %d", name, j+1), Object: m})
				b, _ := yaml.Marshal(m)
				ruleDocs = append(ruleDocs, b)
			}
		}
		var objs []*unstructured.Unstructured
		if why == "" {
			for _, doc := range strings.Split(string(sec["input.yaml"]), "\n---\n") {
				u := &unstructured.Unstructured{}
				if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil || u.Object == nil {
					why = "inputs that do not parse"
					break
				}
				if n := u.GetNamespace(); n != "" && n != "default" {
					why = "objects in other namespaces"
					break
				}
				u.SetNamespace(ns)
				if _, namespaced, err := resource(u); err != nil || !namespaced {
					why = "kinds the API server does not serve, or cluster-scoped objects"
					break
				}
				objs = append(objs, u)
			}
		}
		if why == "" {
			res := translate.Compile(rules, translate.Options{ClusterRulesNamespace: "kubemod-system"})
			switch {
			case len(res.Skipped) > 0:
				why = "rules that do not translate"
			case len(res.Translated) == 0:
				why = "no rules"
			}
			for _, tr := range res.Translated {
				policies = append(policies, tr.Objects...)
			}
		}
		if why != "" {
			skipped[why]++
			continue
		}
		runs = append(runs, caseRun{name: name, ns: ns, rules: string(bytes.Join(ruleDocs, []byte("---\n"))), objects: objs})
	}
	if len(runs) < 100 {
		t.Fatalf("%d cases to compare; want at least 100", len(runs))
	}
	for _, r := range runs {
		createNS(r.ns)
	}
	for _, p := range policies {
		u := &unstructured.Unstructured{Object: p}
		ri, _, err := resource(u)
		if err == nil {
			_, err = ri.Create(ctx, u, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	// The policies are active once the last one refuses; then every
	// policy's informer has had its time.
	sentinel := map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": map[string]any{"name": "zz-sentinel"},
		"spec": map[string]any{"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"configmaps"}}}},
			"matchConditions": []any{map[string]any{"name": "sentinel", "expression": "object.metadata.name == 'sentinel'"}},
			"validations":     []any{map[string]any{"expression": "false", "message": "sentinel"}}}}
	binding := map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": map[string]any{"name": "zz-sentinel"},
		"spec": map[string]any{"policyName": "zz-sentinel", "validationActions": []any{"Deny"}}}
	for _, o := range []map[string]any{sentinel, binding} {
		u := &unstructured.Unstructured{Object: o}
		ri, _, _ := resource(u)
		if _, err := ri.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	probe := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "sentinel", "namespace": "plain"}}}
	eventually(t, 60*time.Second, func() error {
		ri, _, _ := resource(probe)
		if _, err := ri.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err == nil {
			return fmt.Errorf("the policies are not active yet")
		}
		return nil
	})
	time.Sleep(3 * time.Second)

	strip := func(m map[string]any) map[string]any {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m = nil
		if err := utiljson.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"uid", "creationTimestamp", "resourceVersion", "managedFields", "generation"} {
			unstructured.RemoveNestedField(m, "metadata", f)
		}
		delete(m, "status")
		return m
	}
	dir := t.TempDir()
	compared, objects, refusals := 0, 0, 0
	notTaken, invalidResults := 0, 0
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			rulesPath := filepath.Join(dir, r.ns+"-rules.yaml")
			if err := os.WriteFile(rulesPath, []byte(r.rules), 0o644); err != nil {
				t.Fatal(err)
			}
			for i, u := range r.objects {
				// The object as the API server holds it: defaulted.
				plain := u.DeepCopy()
				plain.SetNamespace("plain")
				ri, _, _ := resource(plain)
				d, err := ri.Create(ctx, plain, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if err != nil {
					notTaken++
					t.Logf("object %d: the API server does not take it: %v", i+1, err)
					continue
				}
				in := strip(d.Object)
				unstructured.SetNestedField(in, r.ns, "metadata", "namespace")
				// The rules, offline.
				inPath := filepath.Join(dir, fmt.Sprintf("%s-%d.yaml", r.ns, i))
				b, _ := yaml.Marshal(in)
				if err := os.WriteFile(inPath, b, 0o644); err != nil {
					t.Fatal(err)
				}
				// The case's namespace, as the API server has it.
				nsPath := filepath.Join(dir, r.ns+"-ns.yaml")
				nsDoc := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {kubernetes.io/metadata.name: %s}}\n", r.ns, r.ns)
				if err := os.WriteFile(nsPath, []byte(nsDoc), 0o644); err != nil {
					t.Fatal(err)
				}
				var out, errs bytes.Buffer
				code := cli.ExecuteContext(ctx, []string{"apply", "--rules", rulesPath, "-f", inPath, "--context", nsPath, "-o", "json"}, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errs})
				var want map[string]any
				if code == 0 {
					// A result the API server cannot take (a label that is
					// a number, say) is refused through the webhook too.
					var res map[string]any
					if err := yaml.Unmarshal(out.Bytes(), &res); err != nil {
						t.Fatal(err)
					}
					res = strip(res)
					unstructured.SetNestedField(res, "plain", "metadata", "namespace")
					ur := &unstructured.Unstructured{Object: res}
					rr, _, _ := resource(ur)
					decoded, err := rr.Create(ctx, ur, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
					if err != nil {
						invalidResults++
						t.Logf("object %d: the rules' result is invalid on the API server (%v): refused either way", i+1, err)
						code = -1
					} else {
						// What the webhook's patch becomes in the API server
						// (decoded as its type, defaulted).
						want = strip(decoded.Object)
						unstructured.SetNestedField(want, r.ns, "metadata", "namespace")
					}
				}
				// The compiled policies, in the API server.
				u2 := &unstructured.Unstructured{Object: in}
				ri2, _, _ := resource(u2)
				got, apiErr := ri2.Create(ctx, u2, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				objects++
				switch code {
				case 0:
					if apiErr != nil {
						t.Errorf("object %d: the rules admit it, the API server refuses it: %v", i+1, apiErr)
						continue
					}
					if diff := cmp.Diff(want, strip(got.Object)); diff != "" {
						t.Errorf("object %d: (-rules +API server):\n%s", i+1, diff)
					}
				case 1:
					refusals++
					if apiErr == nil {
						t.Errorf("object %d: the rules refuse it (%s), the API server admits it", i+1, strings.TrimSpace(errs.String()))
						continue
					}
					// One of the rules' messages (`ns/name: "msg"`): the API
					// server reports one refusal.
					var msgs []string
					for _, m := range quotedMessages.FindAllStringSubmatch(errs.String(), -1) {
						if msg, err := strconv.Unquote(m[1]); err == nil {
							msgs = append(msgs, msg)
						}
					}
					if len(msgs) > 0 && !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(apiErr.Error(), m) }) {
						t.Errorf("object %d: the API server's refusal has none of the rules' messages %q: %v", i+1, msgs, apiErr)
					}
				case -1:
					if apiErr == nil {
						t.Errorf("object %d: the rules' result is invalid, the API server admits the object", i+1)
					}
				default:
					t.Errorf("object %d: apply exit %d: %s", i+1, code, errs.String())
				}
			}
			compared++
		})
	}
	var lines []string
	for why, n := range skipped {
		lines = append(lines, fmt.Sprintf("%d %s", n, why))
	}
	sort.Strings(lines)
	t.Logf("%d corpus cases compared on the API server (%d objects, %d refused, %d refused for an invalid result, %d objects the API server does not take); not compared:\n  %s",
		compared, objects, refusals, invalidResults, notTaken, strings.Join(lines, "\n  "))
}
