package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/runner"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/webhook"
)

var stressLong = flag.Duration("stress", 0, "TestHostileReviews: how long each class of hostile reviews runs (default 1s; make stress runs it for minutes)")

// hostileRules are Policies that objects' authors can turn against the
// server (each reads what the object holds), and one rule no parser may
// recurse into.
var hostileRules = `
apiVersion: modwright.io/v1alpha1
kind: ClusterModwrightPolicy
metadata: {name: quantity-condition}
spec:
  validations:
  - deny:
      conditions:
        any:
        - key: "{{ request.object.metadata.annotations.memory || '1' }}"
          operator: GreaterThan
          value: 1Ti
    message: too much memory
---
apiVersion: modwright.io/v1alpha1
kind: ClusterModwrightPolicy
metadata: {name: quantity-jmespath}
spec:
  validations:
  - jmespath: "add(request.object.metadata.annotations.memory || '1', '1Ki') != ''"
---
apiVersion: modwright.io/v1alpha1
kind: ClusterModwrightPolicy
metadata: {name: quantity-cel}
spec:
  validations:
  - cel: "!has(object.metadata.annotations) || !('memory' in object.metadata.annotations) || quantity(object.metadata.annotations.memory).isLessThan(quantity('1Ti'))"
---
apiVersion: modwright.io/v1alpha1
kind: ClusterModwrightPolicy
metadata: {name: replace-jmespath}
spec:
  validations:
  - jmespath: "length(replace_all(replace_all(replace_all(request.object.metadata.annotations.s || '', '', request.object.metadata.annotations.s || ''), '', request.object.metadata.annotations.s || ''), '', request.object.metadata.annotations.s || '')) >= to_number('0')"
---
apiVersion: modwright.io/v1alpha1
kind: ClusterModwrightPolicy
metadata: {name: work-jmespath}
spec:
  validations:
  - jmespath: "request.object.metadata.annotations.work == null || length(request.object.metadata.annotations.work` + strings.Repeat(" | [@, @][]", 40) + `) > to_number('0')"
---
apiVersion: modwright.io/v1alpha1
kind: ClusterModwrightPolicy
metadata: {name: replace-cel}
spec:
  variables:
  - {name: s, cel: "has(object.metadata.annotations) && 's' in object.metadata.annotations ? object.metadata.annotations.s : ''"}
  validations:
  - cel: "variables.s.replace('', variables.s).replace('', variables.s).size() >= 0"
---
apiVersion: modwright.io/v1alpha1
kind: ClusterModwrightPolicy
metadata: {name: copy-patch}
spec:
  match: {resources: [{kinds: [Widget]}]}
  mutations:
  - jsonPatch: "has(object.spec) && has(object.spec.copies) ? lists.range(int(object.spec.copies)).map(i, JSONPatch{op: 'copy', from: '/spec', path: '/spec/c' + string(i)}) : []"
---
apiVersion: modwright.io/v1alpha1
kind: ClusterModwrightPolicy
metadata: {name: cue-doubling}
spec:
  validations:
  - cue: |
      object: _ @tag(object)
      a0: *object.metadata.annotations.double | ""
` + cueDoublings + `      validate: {if len(a40) > 1 {valid: true}}
---
apiVersion: modwright.io/v1alpha1
kind: ClusterModwrightPolicy
metadata: {name: cue-loop}
spec:
  validations:
  - cue: |
      import ("list", "strconv")
      object: _ @tag(object)
      n: *strconv.Atoi(object.metadata.annotations.loop) | 0
      out: [for x in list.Range(0, n, 1) for y in list.Range(0, n, 1) {x * y}]
      validate: {if len(out) > 1 {valid: true}}
---
apiVersion: modwright.io/v1alpha1
kind: ClusterModwrightPolicy
metadata: {name: cue-constant}
spec:
  validations:
  - cue: |
      a0: "0123456789abcdef"
` + cueDoublings + `      validate: {if len(a40) > 1 {valid: true}}
---
apiVersion: modwright.io/v1alpha1
kind: ClusterModwrightPolicy
metadata: {name: deep-parser}
spec:
  validations:
  - jmespath: "` + strings.Repeat("(", 600000) + "a" + strings.Repeat(")", 600000) + `"
`

// cueDoublings double a0 forty times (a40 is a terabyte).
var cueDoublings = func() string {
	var b strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "      a%d: a%d + a%d\n", i, i-1, i-1)
	}
	return b.String()
}()

// hostileObjects are one object of each class: a quantity no comparison
// ends on, a string every replace multiplies, a value a projection doubles
// forty times, forty copies of a subtree
// into itself. Each is denied: its rule fails, and a Policy's failure
// policy is Fail.
var hostileObjects = map[string]string{
	"quantity":     `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "q", "namespace": "team-a", "annotations": {"memory": "1e-999999999"}}}`,
	"replace":      `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "r", "namespace": "team-a", "annotations": {"s": "` + strings.Repeat("ab", 4096) + `"}}}`,
	"work":         `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w", "namespace": "team-a", "annotations": {"work": "x"}}}`,
	"copy":         `{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "team-a"}, "spec": {"copies": 40, "s": "` + strings.Repeat("x", 4096) + `"}}`,
	"cue-doubling": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d", "namespace": "team-a", "annotations": {"double": "0123456789abcdef"}}}`,
	"cue-loop":     `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "l", "namespace": "team-a", "annotations": {"loop": "100000"}}}`,
}

const benignObject = `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ok", "namespace": "team-a", "annotations": {"memory": "1Gi", "s": "ab"}}}`

// TestHostileReviews: while 8 clients send hostile reviews of each class
// at once, benign reviews keep being answered (admitted) within their
// deadline, the process stays under the chart's memory limit, the hostile
// reviews are answered (denied or failed, never hanging), and no
// goroutine is left once they end. The rule no parser may recurse into is
// broken at load and the others serve. It runs in a process of its own,
// so that the resident size measured is the server's and its clients',
// not what earlier tests left.
func TestHostileReviews(t *testing.T) {
	if os.Getenv("MODWRIGHT_STRESS_CHILD") != "1" {
		args := []string{"-test.run=^TestHostileReviews$", "-test.v", "-test.count=1"}
		if *stressLong > 0 {
			args = append(args, "-stress="+stressLong.String())
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "MODWRIGHT_STRESS_CHILD=1")
		out, err := cmd.CombinedOutput()
		t.Logf("the stress process:\n%s", out)
		if err != nil {
			t.Fatalf("the stress process failed: %v", err)
		}
		return
	}
	docs, err := source.ParseManifest("hostile.yaml", []byte(hostileRules))
	if err != nil {
		t.Fatal(err)
	}
	// CUE runs in workers, as serve runs it.
	cue, stopCUE, err := (&serveOptions{cueWorkerMemory: 64 << 20}).cueLanguage()
	if err != nil {
		t.Fatal(err)
	}
	defer stopCUE()
	res := source.LoadRules(docs, newServingRegistry("modwright-system", cue))
	if len(res.Errors) != 2 || !strings.Contains(res.Errors[0].Error(), "more memory than its worker may") ||
		!strings.Contains(res.Errors[1].Error(), "expression longer than") {
		t.Fatalf("load errors: %v; want cue-constant's and deep-parser's", res.Errors)
	}
	snap := engine.NewSnapshot(res.Rules)
	if broken := snap.Broken(); len(broken) != 2 {
		t.Fatalf("broken rules: %d, want cue-constant and deep-parser", len(broken))
	}
	st := &source.Store{}
	st.Publish(snap)
	opts := runner.Options(nil)
	opts.NoTrace = true
	// The chart's deadline (dragnet.timeoutSeconds, serve's --review-timeout).
	const timeout = webhook.DefaultTimeout
	srv := httptest.NewServer(webhook.NewDragnet(webhook.Options{
		Evaluator: engine.New(opts),
		Snapshots: st,
		Log:       logr.Discard(),
		Timeout:   timeout,
	}))
	defer srv.Close()

	review := func(obj string) (allowed bool, took time.Duration, err error) {
		var o struct{ APIVersion, Kind string }
		if err := json.Unmarshal([]byte(obj), &o); err != nil {
			return false, 0, err
		}
		group, version, found := strings.Cut(o.APIVersion, "/")
		if !found {
			group, version = "", o.APIVersion
		}
		gvk := fmt.Sprintf(`{"group": %q, "version": %q, "kind": %q}`, group, version, o.Kind)
		gvr := fmt.Sprintf(`{"group": %q, "version": %q, "resource": %q}`, group, version, strings.ToLower(o.Kind)+"s")
		body := `{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u", "operation": "CREATE",
			"kind": ` + gvk + `, "resource": ` + gvr + `,
			"namespace": "team-a", "name": "x", "userInfo": {"username": "alice"}, "object": ` + obj + `}}`
		start := time.Now()
		resp, err := http.Post(srv.URL+webhook.DragnetPath, "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			return false, 0, err
		}
		defer resp.Body.Close()
		var out struct {
			Response struct {
				Allowed bool `json:"allowed"`
			} `json:"response"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return false, time.Since(start), fmt.Errorf("HTTP %d: %w", resp.StatusCode, err)
		}
		return out.Response.Allowed, time.Since(start), nil
	}
	if ok, _, err := review(benignObject); err != nil || !ok {
		t.Fatalf("benign review before: allowed %v, %v", ok, err)
	}
	for class, obj := range hostileObjects {
		ok, took, err := review(obj)
		if err != nil || ok {
			t.Fatalf("hostile %s: allowed %v after %v, %v", class, ok, took, err)
		}
		t.Logf("hostile %s alone: allowed %v in %v", class, ok, took)
	}
	http.DefaultClient.CloseIdleConnections()
	time.Sleep(100 * time.Millisecond)
	baseline, _ := busyGoroutines()

	d := time.Second
	if *stressLong > 0 {
		d = *stressLong
	}
	var peak atomic.Int64
	stopSampling := make(chan struct{})
	var sampling sync.WaitGroup
	sampling.Go(func() {
		for {
			if rss := residentBytes(); rss > peak.Load() {
				peak.Store(rss)
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	for class, obj := range hostileObjects {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		var hostile sync.WaitGroup
		var answered, hung atomic.Int64
		for range 8 {
			hostile.Go(func() {
				for ctx.Err() == nil {
					_, took, err := review(obj)
					if err != nil || took > timeout {
						hung.Add(1)
						continue
					}
					answered.Add(1)
				}
			})
		}
		benign, slow := 0, time.Duration(0)
		for ctx.Err() == nil {
			ok, took, err := review(benignObject)
			if err != nil || !ok || took > timeout {
				t.Errorf("%s: a benign review under hostile load: allowed %v after %v, %v", class, ok, took, err)
				break
			}
			benign++
			slow = max(slow, took)
		}
		hostile.Wait()
		cancel()
		t.Logf("%s: %d hostile reviews answered, %d not in time; %d benign admitted, the slowest in %v", class, answered.Load(), hung.Load(), benign, slow)
		if hung.Load() > 0 {
			t.Errorf("%s: %d hostile reviews were not answered within the deadline", class, hung.Load())
		}
	}
	close(stopSampling)
	sampling.Wait()
	const chartLimit = 384 << 20 // deploy/helm/modwright/values.yaml resources.limits.memory (the server and its CUE workers)
	t.Logf("peak RSS %d MiB", peak.Load()>>20)
	if peak.Load() > chartLimit {
		t.Errorf("peak RSS %d MiB, over the chart's limit of %d MiB", peak.Load()>>20, chartLimit>>20)
	}
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	n, stacks := busyGoroutines()
	for n > baseline && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		n, stacks = busyGoroutines()
	}
	if n > baseline {
		t.Errorf("%d goroutines after the hostile reviews, %d before:\n%s", n, baseline, stacks)
	}
}

// busyGoroutines counts the goroutines but the dragnet's idle evaluation
// workers (each waits for a review and exits after a minute idle, by
// design), and returns their stacks.
func busyGoroutines() (int, string) {
	buf := make([]byte, 4<<20)
	var busy []string
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		lines := strings.SplitN(g, "\n", 3)
		if len(lines) > 1 && strings.Contains(lines[1], "internal/webhook.(*Dragnet).worker(") {
			continue
		}
		// An idle CUE worker process's waiters (one for its exit, one
		// for its stderr; at most --cue-workers of them).
		if strings.Contains(g, "lang/cue.(*Workers).start") || strings.Contains(g, "os/exec.(*Cmd).Start.func") {
			continue
		}
		busy = append(busy, g)
	}
	return len(busy), strings.Join(busy, "\n\n")
}

// residentBytes is the process's resident set size and its children's
// (the CUE workers') anonymous memory (their file pages are this binary's,
// counted once as a container's memory counts them), Linux; 0 when
// unknown.
func residentBytes() int64 {
	total := statusKB("/proc/self/status", "VmRSS:") << 10
	self := strconv.Itoa(os.Getpid())
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		if fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(fields) > 1 && fields[1] == self {
			total += statusKB(filepath.Join(filepath.Dir(f), "status"), "RssAnon:") << 10
		}
	}
	return total
}

// statusKB reads a kB field of a /proc status file.
func statusKB(path, field string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb
		}
	}
	return 0
}
