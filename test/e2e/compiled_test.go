package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/cli"
)

const compiledRules = "../../testdata/compile/modrules.yaml"

// TestCompiledOnAPIServer: testdata/compile/modrules.yaml's ten ModRules
// through the modwright webhook, and the same rules compiled (`modwright
// compile`) into admission policies the API server runs itself, give the
// same answers on the real kube-apiserver: admitted objects equal, each
// refusal with the rule's message. With MODWRIGHT_THROUGHPUT=1 it also
// measures creates per second and their latency for no admission, the
// webhook and the compiled policies (make bench-admission).
func TestCompiledOnAPIServer(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	ctx := context.Background()
	op := cl.startOperator(t, "a")
	op.waitReady(t)
	cl.lb.add(op.webhook)

	// The compiled policies: every rule translates.
	var out, errs bytes.Buffer
	if code := cli.ExecuteContext(ctx, []string{"compile", "--rules", compiledRules}, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errs}); code != 0 || !strings.Contains(errs.String(), "compiled 10 of 10 rules") {
		t.Fatalf("compile: exit %d\n%s", code, errs.String())
	}
	var policies []*unstructured.Unstructured
	for _, doc := range strings.Split(out.String(), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		policies = append(policies, u)
	}

	// The namespace, ignored by the webhook until its phase.
	ignored := map[string]string{"admission.kubemod.io/ignore": "true"}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "bench"}}}
	ns.SetLabels(ignored)
	eventually(t, 30*time.Second, func() error { return client.IgnoreAlreadyExists(cl.c.Create(ctx, ns)) })

	cfg := rest.CopyConfig(cl.cfg)
	cfg.QPS, cfg.Burst = 1e6, 1e6
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	deployments := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace("bench")
	dryRun := func(obj map[string]any) (map[string]any, error) {
		u, err := deployments.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return nil, err
		}
		m := u.Object
		for _, f := range []string{"uid", "creationTimestamp", "resourceVersion", "managedFields", "generation"} {
			unstructured.RemoveNestedField(m, "metadata", f)
		}
		delete(m, "status")
		return m, nil
	}
	objects := compiledObjects(t)
	probe := objects["no app label"] // refused by app-label once the rules are active
	answers := func() map[string]string {
		got := map[string]string{}
		for name, obj := range objects {
			m, err := dryRun(obj)
			if err != nil {
				got[name] = "refused: " + err.Error()
				continue
			}
			b, _ := yaml.Marshal(m)
			got[name] = string(b)
		}
		return got
	}
	measurements := map[string][]throughput{}
	measure := func(phase string) {
		if os.Getenv("MODWRIGHT_THROUGHPUT") != "1" {
			return
		}
		d := 20 * time.Second
		for _, workers := range []int{1, 16} {
			measurements[phase] = append(measurements[phase], measureCreates(t, ctx, deployments, objects["good"], workers, d))
		}
	}

	// No admission at all: the webhook skips the namespace, no policy.
	measure("no admission")

	// The compiled policies, in the API server.
	for _, p := range policies {
		if err := cl.c.Create(ctx, p.DeepCopy()); err != nil {
			t.Fatalf("creating %s %s: %v", p.GetKind(), p.GetName(), err)
		}
	}
	eventually(t, 30*time.Second, func() error {
		if _, err := dryRun(probe); err == nil {
			return fmt.Errorf("the policies are not active yet")
		}
		return nil
	})
	time.Sleep(2 * time.Second) // every policy's informer
	native := answers()
	measure("compiled to admission policies")
	if os.Getenv("MODWRIGHT_THROUGHPUT") == "1" {
		// Where the compiled path's time goes: each policy alone.
		for _, keep := range []string{"ValidatingAdmissionPolicy", "MutatingAdmissionPolicy"} {
			var off []*unstructured.Unstructured
			for _, p := range policies {
				if !strings.HasPrefix(p.GetKind(), keep) {
					off = append(off, p)
					if err := cl.c.Delete(ctx, p.DeepCopy()); err != nil {
						t.Fatal(err)
					}
				}
			}
			time.Sleep(3 * time.Second) // the API server's informers
			phase := "compiled: the " + keep + " alone"
			measurements[phase] = append(measurements[phase], measureCreates(t, ctx, deployments, objects["good"], 1, 20*time.Second))
			for _, p := range off {
				u := p.DeepCopy()
				u.SetResourceVersion("")
				if err := cl.c.Create(ctx, u); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(3 * time.Second)
		}
	}
	for _, p := range policies {
		if err := cl.c.Delete(ctx, p.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, func() error {
		if _, err := dryRun(probe); err != nil {
			return fmt.Errorf("the policies are still active: %v", err)
		}
		return nil
	})

	// The ModRules, through the webhook.
	ns.SetLabels(nil)
	if err := cl.c.Update(ctx, ns); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(compiledRules)
	if err != nil {
		t.Fatal(err)
	}
	var modRules []*unstructured.Unstructured
	for _, doc := range strings.Split(string(data), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		modRules = append(modRules, u.DeepCopy())
		create(t, cl.c, u)
	}
	eventually(t, 30*time.Second, func() error {
		if _, err := dryRun(probe); err == nil {
			return fmt.Errorf("the rules are not active yet")
		}
		return nil
	})
	time.Sleep(2 * time.Second) // every rule loaded
	webhook := answers()
	measure("10 ModRules through the webhook")
	if os.Getenv("MODWRIGHT_THROUGHPUT") == "1" {
		measurePlacement(t, cl, modRules, policies, func(phase string) {
			measurements[phase] = append(measurements[phase], measureCreates(t, ctx, deployments, objects["good"], 1, 20*time.Second))
		})
	}

	names := make([]string, 0, len(objects))
	for n := range objects {
		names = append(names, n)
	}
	sort.Strings(names)
	refused := 0
	for _, n := range names {
		w, c := webhook[n], native[n]
		if !strings.HasPrefix(w, "refused: ") {
			if diff := cmp.Diff(w, c); diff != "" {
				t.Errorf("%s: the resulting objects differ (-webhook +compiled):\n%s", n, diff)
			}
			continue
		}
		refused++
		// The rule's message, in the webhook's `ns/name: "msg"`.
		_, msg, _ := strings.Cut(w, `: "`)
		msg, _, _ = strings.Cut(msg, `"`)
		if !strings.HasPrefix(c, "refused: ") || msg == "" || !strings.Contains(c, msg) {
			t.Errorf("%s:\nwebhook:  %s\ncompiled: %s", n, w, c)
		}
	}
	// The patches did apply (both ways, being equal).
	for _, want := range []string{"team: platform", "owner: web-team", `proxy: "true"`, "revisionHistoryLimit: 3"} {
		if !strings.Contains(native["good"], want) {
			t.Errorf("the good Deployment lacks %s:\n%s", want, native["good"])
		}
	}
	if strings.Contains(native["debug annotation"], "debug:") || !strings.Contains(native["debug annotation"], "keep:") {
		t.Errorf("the debug annotation is not removed alone:\n%s", native["debug annotation"])
	}
	if refused == 0 || refused == len(names) {
		t.Errorf("%d of %d objects refused: the set proves nothing", refused, len(names))
	}
	t.Logf("%d objects, %d refused, the same answers through the webhook and compiled", len(names), refused)

	if len(measurements) > 0 {
		var b strings.Builder
		b.WriteString("| admission | workers | creates/s | p50 | p99 | ratio to no admission (creates/s) |\n|---|---|---|---|---|---|\n")
		for _, phase := range append([]string{"no admission", "compiled to admission policies", "compiled: the ValidatingAdmissionPolicy alone", "compiled: the MutatingAdmissionPolicy alone", "10 ModRules through the webhook"}, placementPhases...) {
			for _, m := range measurements[phase] {
				// The baseline with as many clients.
				base := measurements["no admission"][slices.IndexFunc(measurements["no admission"], func(n throughput) bool { return n.workers == m.workers })]
				fmt.Fprintf(&b, "| %s | %d | %.0f | %s | %s | %.2fx |\n", phase, m.workers, m.rate, m.p50.Round(10*time.Microsecond), m.p99.Round(10*time.Microsecond), base.rate/m.rate)
			}
		}
		b.WriteString(placementVerdicts(measurements))
		t.Logf("dry-run creates of one Deployment, %s each:\n%s", 20*time.Second, b.String())
		if p := os.Getenv("MODWRIGHT_THROUGHPUT_OUT"); p != "" {
			if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
				t.Error(err)
			}
		}
	}
}

// throughput is one measurement.
type throughput struct {
	workers  int
	rate     float64 // creates per second
	p50, p99 time.Duration
}

// measureCreates creates obj (dry-run, every admission step run, nothing
// stored) as fast as workers clients can for d, after a second's warm-up.
func measureCreates(t *testing.T, ctx context.Context, ri dynamic.ResourceInterface, obj map[string]any, workers int, d time.Duration) throughput {
	t.Helper()
	run := func(d time.Duration) ([]time.Duration, error) {
		var mu sync.Mutex
		var all []time.Duration
		var first error
		var wg sync.WaitGroup
		deadline := time.Now().Add(d)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				u := &unstructured.Unstructured{Object: obj}
				var mine []time.Duration
				for time.Now().Before(deadline) {
					start := time.Now()
					_, err := ri.Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
					if err != nil {
						mu.Lock()
						if first == nil {
							first = err
						}
						mu.Unlock()
						return
					}
					mine = append(mine, time.Since(start))
				}
				mu.Lock()
				all = append(all, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		return all, first
	}
	if _, err := run(time.Second); err != nil {
		t.Fatal(err)
	}
	lat, err := run(d)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lat)
	at := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	return throughput{workers: workers, rate: float64(len(lat)) / d.Seconds(), p50: at(0.50), p99: at(0.99)}
}

// compiledObjects are the Deployments the answers are compared on.
func compiledObjects(t *testing.T) map[string]map[string]any {
	t.Helper()
	deploy := func(mod func(d map[string]any)) map[string]any {
		var d map[string]any
		if err := yaml.Unmarshal([]byte(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: bench, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: "nginx:1.27"}
      - {name: sidecar, image: "envoy:1.30"}
`), &d); err != nil {
			t.Fatal(err)
		}
		if mod != nil {
			mod(d)
		}
		return d
	}
	spec := func(d map[string]any) map[string]any { return d["spec"].(map[string]any) }
	pod := func(d map[string]any) map[string]any {
		return spec(d)["template"].(map[string]any)["spec"].(map[string]any)
	}
	container := func(d map[string]any, i int) map[string]any { return pod(d)["containers"].([]any)[i].(map[string]any) }
	return map[string]map[string]any{
		"good":         deploy(nil),
		"no app label": deploy(func(d map[string]any) { delete(d["metadata"].(map[string]any), "labels") }),
		"latest":       deploy(func(d map[string]any) { container(d, 1)["image"] = "envoy:latest" }),
		"latest, registry path": deploy(func(d map[string]any) {
			container(d, 0)["image"] = "registry.example.com/team/web:latest"
		}),
		"50 replicas":  deploy(func(d map[string]any) { spec(d)["replicas"] = int64(50) }),
		"51 replicas":  deploy(func(d map[string]any) { spec(d)["replicas"] = int64(51) }),
		"host network": deploy(func(d map[string]any) { pod(d)["hostNetwork"] = true }),
		"host network false": deploy(func(d map[string]any) {
			pod(d)["hostNetwork"] = false
		}),
		"privileged": deploy(func(d map[string]any) {
			container(d, 1)["securityContext"] = map[string]any{"privileged": true}
		}),
		"not privileged": deploy(func(d map[string]any) {
			container(d, 1)["securityContext"] = map[string]any{"privileged": false}
		}),
		"debug annotation": deploy(func(d map[string]any) {
			d["metadata"].(map[string]any)["annotations"] = map[string]any{"debug": "yes", "keep": "1"}
		}),
		"no nginx": deploy(func(d map[string]any) { container(d, 0)["image"] = "httpd:2.4" }),
		"history limit set": deploy(func(d map[string]any) {
			spec(d)["revisionHistoryLimit"] = int64(7)
		}),
		"team label set": deploy(func(d map[string]any) {
			d["metadata"].(map[string]any)["labels"] = map[string]any{"app": "web", "team": "other"}
		}),
	}
}

const leftRule = "../../testdata/compile/left.yaml"

// The phases measurePlacement adds, one client each.
var placementPhases = []string{
	"the 5 Reject ModRules alone through the webhook",
	"the 5 Patch ModRules alone through the webhook",
	"11 ModRules through the webhook (one does not translate)",
	"the 10 compiled, the one left through the webhook",
}

// measurePlacement measures where compile places a rule (translate.Place):
// each of the two policies' rules alone through the webhook (against the
// policy alone, measured before), and the ten ModRules with one that does
// not translate (left.yaml): all eleven through the webhook, where compile
// keeps them, against the ten compiled and the one left to the webhook
// (--placement native). The webhook serves modRules when it is called;
// policies are the ten compiled.
func measurePlacement(t *testing.T, cl *cluster, modRules, policies []*unstructured.Unstructured, measure func(phase string)) {
	t.Helper()
	ctx := context.Background()
	settle := func() { time.Sleep(3 * time.Second) } // the operator's informers, the API server's
	del := func(objs []*unstructured.Unstructured) {
		for _, u := range objs {
			if err := cl.c.Delete(ctx, u.DeepCopy()); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
		}
	}
	add := func(objs []*unstructured.Unstructured) {
		for _, u := range objs {
			eventually(t, 30*time.Second, func() error {
				c := u.DeepCopy()
				c.SetResourceVersion("")
				return cl.c.Create(ctx, c) // AlreadyExists: the deletion is not done yet
			})
		}
	}
	ofType := func(typ string) (out []*unstructured.Unstructured) {
		for _, u := range modRules {
			if v, _, _ := unstructured.NestedString(u.Object, "spec", "type"); v == typ {
				out = append(out, u)
			}
		}
		return out
	}
	patch, reject := ofType("Patch"), ofType("Reject")
	if len(patch) != 5 || len(reject) != 5 {
		t.Fatalf("%d Patch and %d Reject ModRules, want 5 and 5", len(patch), len(reject))
	}
	del(patch)
	settle()
	measure(placementPhases[0])
	add(patch)
	del(reject)
	settle()
	measure(placementPhases[1])
	add(reject)

	data, err := os.ReadFile(leftRule)
	if err != nil {
		t.Fatal(err)
	}
	left := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &left.Object); err != nil {
		t.Fatal(err)
	}
	add([]*unstructured.Unstructured{left})
	settle()
	// Alternated twice: the two are close (the webhook's patch costs the
	// API server about what the mutating policy does).
	for round := range 2 {
		measure(placementPhases[2])
		add(policies)
		del(modRules)
		settle()
		measure(placementPhases[3])
		if round == 0 {
			add(modRules)
			del(policies)
			settle()
		}
	}
	del(policies)
	del([]*unstructured.Unstructured{left})
}

// placementVerdicts says, from the measurements (the mean of a phase's
// runs), whether each placement compile chooses by default is the faster
// one (more creates per second), or level with the other within 3%.
func placementVerdicts(m map[string][]throughput) string {
	rate := func(phase string) float64 { // the mean of its runs
		sum := 0.0
		for _, r := range m[phase] {
			sum += r.rate
		}
		return sum / float64(max(1, len(m[phase])))
	}
	var b strings.Builder
	b.WriteString("\n| rules | in the API server (creates/s) | in the webhook (creates/s) | compile places them | verdict: where placed, not slower |\n|---|---|---|---|---|\n")
	for _, c := range []struct {
		rules, native, webhook string
		inAPIServer            bool
	}{
		{"the 5 Reject ModRules, alone", "compiled: the ValidatingAdmissionPolicy alone", placementPhases[0], true},
		{"the 5 Patch ModRules, alone", "compiled: the MutatingAdmissionPolicy alone", placementPhases[1], true},
		{"the 10 ModRules, beside one that does not translate", placementPhases[3], placementPhases[2], false},
	} {
		n, w := rate(c.native), rate(c.webhook)
		where, placed, other := "in the webhook", w, n
		if c.inAPIServer {
			where, placed, other = "in the API server", n, w
		}
		verdict := "met"
		switch {
		case placed >= other:
		case placed >= 0.97*other:
			verdict = "met (level: within 3%, the noise of one run)"
		default:
			verdict = fmt.Sprintf("MISSED (%.0f%% slower)", 100*(other/placed-1))
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %s | %s |\n", c.rules, n, w, where, verdict)
	}
	return b.String()
}
