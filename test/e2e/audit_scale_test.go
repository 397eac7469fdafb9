package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/testtool"
)

// TestAuditScale measures the background scan at scale (BENCHMARKS.md,
// issue 33): 50,000 objects of three kinds, about 3 KB each (ConfigMaps,
// Pods, Deployments in 50 namespaces), against 100 rules of three kinds
// (Kyverno ClusterPolicies, ClusterModwrightPolicies, ModRules), scanned by
// the operator running as its own process (its peak RSS read from
// /proc). It takes minutes: run it with MODWRIGHT_AUDIT_SCALE=1 (make
// audit-scale); make test does not. MODWRIGHT_AUDIT_SCALE_OBJECTS changes
// the count, MODWRIGHT_AUDIT_SCALE_ARGS adds operator flags, and
// MODWRIGHT_AUDIT_SCALE_PROFILE=PATH saves the operator's heap after the
// scan (PATH), its CPU during its first 20 s (PATH.cpu; seconds from
// MODWRIGHT_AUDIT_SCALE_PROFILE_SECONDS), the API server's CPU in the same
// seconds (PATH.apiserver.cpu) and the operator's heap then (PATH.mid), and
// MODWRIGHT_AUDIT_SCALE_LOG=PATH its log (PATH.audit and PATH.base; with
// MODWRIGHT_AUDIT_SCALE_GODEBUG=gctrace=1, its collections).
func TestAuditScale(t *testing.T) {
	if os.Getenv("MODWRIGHT_AUDIT_SCALE") != "1" {
		t.Skip("MODWRIGHT_AUDIT_SCALE=1 runs the background scan's scale measurement (make audit-scale)")
	}
	objects := 50000
	if n, err := strconv.Atoi(os.Getenv("MODWRIGHT_AUDIT_SCALE_OBJECTS")); err == nil {
		objects = n
	}
	cl := startCluster(t, false)
	cl.installCRDs(t)
	ctx := context.Background()
	admin, err := cl.env.AddUser(envtest.User{Name: "scale-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(cl.dir, "admin.kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(cl.cfg)
	cfg.QPS, cfg.Burst = 2000, 4000
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	create(t, cl.c, &corev1.Namespace{ObjectMeta: metaName(operatorNS)})
	const namespaces = 50
	for i := range namespaces {
		create(t, cl.c, &corev1.Namespace{ObjectMeta: metaName(fmt.Sprintf("scale-%02d", i))})
	}

	// The rules first: the operator's first snapshot holds all of them.
	for _, doc := range testtool.AuditRules(namespaces) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		gvr := schema.GroupVersionResource{Group: u.GroupVersionKind().Group, Version: u.GroupVersionKind().Version,
			Resource: strings.TrimSuffix(strings.ToLower(u.GetKind()), "y") + map[bool]string{true: "ies", false: "s"}[strings.HasSuffix(u.GetKind(), "y")]}
		if _, err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	start := time.Now()
	createScaleObjects(t, dyn, objects, namespaces)
	t.Logf("created %d objects in %s", objects, time.Since(start).Round(time.Second))

	bin := filepath.Join(cl.dir, "modwright")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/modwright")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The operator without the scan first: what it holds anyway (its
	// informers, the graph of the Pods and Deployments) for the scan's
	// share of the peak.
	base, _ := runScaleOperator(t, bin, kubeconfig, false, nil)
	peak, scan := runScaleOperator(t, bin, kubeconfig, true, cfg)
	reports, err := dyn.Resource(schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"}).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secs, _ := scan["seconds"].(float64)
	reqs, _ := scan["requests"].(float64)
	t.Logf("scan: %v objects, %v resources, %v list requests in %.1f s (%.1f list requests/s; %.1f s of it writing: %.1f s the %v reports, the rest the rules' counts), fail %v, pass %v, error %v; peak RSS %d MiB (%d MiB without the scan); %d PolicyReports",
		scan["objects"], scan["resources"], reqs, secs, reqs/secs, scan["writeSeconds"], scan["reportSeconds"], scan["reports"], scan["fail"], scan["pass"], scan["error"],
		peak>>10, base>>10, len(reports.Items))
	if got, _ := scan["objects"].(float64); int(got) < objects {
		t.Errorf("scanned %v objects, want at least %d", scan["objects"], objects)
	}
	scaleReports := 0
	for _, r := range reports.Items {
		if strings.HasPrefix(r.GetNamespace(), "scale-") {
			scaleReports++
		}
	}
	if scaleReports != namespaces {
		t.Errorf("%d PolicyReports of the scale namespaces, want one per namespace (%d)", scaleReports, namespaces)
	}
}

// createScaleObjects creates n objects, about 3 KB each, across the
// namespaces: ConfigMaps, Pods and Deployments in turn, every fifth one
// breaking the rules.
func createScaleObjects(t *testing.T, dyn dynamic.Interface, n, namespaces int) {
	t.Helper()
	read := func(name string) map[string]any {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "bench", "objects", name))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	templates := []map[string]any{read("configmap.json"), read("pod.json"), read("deployment.json")}
	templates[0]["data"].(map[string]any)["padding"] = strings.Repeat("x", 2000) // to about 3 KB
	gvrs := []schema.GroupVersionResource{{Version: "v1", Resource: "configmaps"}, {Version: "v1", Resource: "pods"},
		{Group: "apps", Version: "v1", Resource: "deployments"}}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				k := i % 3
				obj := &unstructured.Unstructured{Object: deepCopy(templates[k])}
				ns := fmt.Sprintf("scale-%02d", i%namespaces)
				obj.SetNamespace(ns)
				obj.SetName(fmt.Sprintf("obj-%06d", i))
				labels := map[string]string{"app": "scale"}
				if i%5 != 0 {
					labels["team"] = "t" + strconv.Itoa(i%7)
				}
				obj.SetLabels(labels)
				if _, err := dyn.Resource(gvrs[k]).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func deepCopy(m map[string]any) map[string]any {
	return runtime.DeepCopyJSON(m)
}

// runScaleOperator runs the operator as its own process, with the chart's
// memory settings (GOMEMLIMIT=230MiB, --gc-percent 400, --gc-max-headroom 16Mi, --gc-bulk-headroom 32Mi): with audit until
// its first background scan is done (its log line's fields returned),
// without until it has been ready for 15 s. It returns the process's peak
// RSS (KiB) then, and stops it.
func runScaleOperator(t *testing.T, bin, kubeconfig string, audit bool, admin *rest.Config) (peakKiB int, scan map[string]any) {
	t.Helper()
	metricsAddr, probes := "127.0.0.1:"+strconv.Itoa(freePort(t)), "127.0.0.1:"+strconv.Itoa(freePort(t))
	cmd := exec.Command(bin, "serve", "--kubeconfig", kubeconfig, "--namespace", operatorNS, "--pprof",
		"--webhook-port", strconv.Itoa(freePort(t)), "--bind-address", "127.0.0.1", "--cert-host", "127.0.0.1",
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", probes,
		"--mutating-webhook-configuration", "", "--validating-webhook-configuration", "",
		"--kyverno", "--audit="+strconv.FormatBool(audit), "--audit-interval", "1h", "--log-format", "json",
		"--leader-election-id", "scale-"+strconv.FormatBool(audit), // the first run's lease is not released
		"--gc-percent", "400", "--gc-max-headroom", "16Mi", "--gc-bulk-headroom", "32Mi")
	cmd.Args = append(cmd.Args, strings.Fields(os.Getenv("MODWRIGHT_AUDIT_SCALE_ARGS"))...) // --graph=false, say
	cmd.Env = append(os.Environ(), "GOMEMLIMIT=230MiB")
	if v := os.Getenv("MODWRIGHT_AUDIT_SCALE_GODEBUG"); v != "" {
		cmd.Env = append(cmd.Env, "GODEBUG="+v) // the operator's alone (gctrace=1), not the build's
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	profile := os.Getenv("MODWRIGHT_AUDIT_SCALE_PROFILE")
	if profile != "" && audit {
		seconds := cmp.Or(os.Getenv("MODWRIGHT_AUDIT_SCALE_PROFILE_SECONDS"), "20")
		go func() {
			// Once the operator serves: its CPU during its first seconds
			// of serving, the API server's in the same seconds, and the
			// operator's heap then (the middle of the scan).
			for range 600 {
				if resp, err := http.Get("http://" + metricsAddr + "/metrics"); err == nil {
					resp.Body.Close()
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			go func() {
				kc, err := kubernetes.NewForConfig(admin)
				if err != nil {
					return
				}
				b, err := kc.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", seconds).DoRaw(context.Background())
				if err == nil {
					_ = os.WriteFile(profile+".apiserver.cpu", b, 0o600)
				}
			}()
			save := func(path, name string) {
				resp, err := http.Get("http://" + metricsAddr + path)
				if err != nil {
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				_ = os.WriteFile(profile+name, b, 0o600)
			}
			save("/debug/pprof/profile?seconds="+seconds, ".cpu")
			save("/debug/pprof/heap?gc=1", ".mid")
		}()
	}
	var logFile io.Writer = io.Discard
	if path := os.Getenv("MODWRIGHT_AUDIT_SCALE_LOG"); path != "" {
		f, err := os.Create(path + map[bool]string{true: ".audit", false: ".base"}[audit])
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		logFile = f
	}
	done := make(chan map[string]any, 1)
	var tail []string
	var tailMu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			_, _ = fmt.Fprintln(logFile, line)
			tailMu.Lock()
			if tail = append(tail, line); len(tail) > 40 {
				tail = tail[1:]
			}
			tailMu.Unlock()
			if strings.Contains(line, "background scan done") {
				var m map[string]any
				if json.Unmarshal([]byte(line), &m) == nil {
					done <- m
				}
			}
		}
	}()
	fail := func(format string, args ...any) {
		tailMu.Lock()
		defer tailMu.Unlock()
		t.Fatalf(format+"; log:\n%s", append(args, strings.Join(tail, "\n"))...)
	}
	if audit {
		select {
		case scan = <-done:
		case <-time.After(10 * time.Minute):
			fail("no background scan within 10 minutes")
		}
	} else {
		deadline := time.Now().Add(5 * time.Minute)
		for {
			resp, err := http.Get("http://" + probes + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				fail("not ready within 5 minutes")
			}
			time.Sleep(200 * time.Millisecond)
		}
		time.Sleep(15 * time.Second)
	}
	if profile != "" && audit {
		// The operator's heap after the scan (go tool pprof PATH).
		if resp, err := http.Get("http://" + metricsAddr + "/debug/pprof/heap"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			_ = os.WriteFile(profile, b, 0o600)
		}
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	hwm := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(status)
	if hwm == nil {
		t.Fatalf("no VmHWM in /proc status:\n%s", status)
	}
	peakKiB, _ = strconv.Atoi(string(hwm[1]))
	anon := regexp.MustCompile(`RssAnon:\s+(\d+) kB`).FindSubmatch(status)
	file := regexp.MustCompile(`RssFile:\s+(\d+) kB`).FindSubmatch(status)
	if anon != nil && file != nil {
		t.Logf("operator (audit %v): peak RSS %s KiB; now RssAnon %s KiB, RssFile %s KiB (the binary's pages); %s s of CPU",
			audit, hwm[1], anon[1], file[1], cpuSeconds(cmd.Process.Pid))
	}
	return peakKiB, scan
}

// cpuSeconds is the CPU time process pid has used (user and system, from
// /proc/PID/stat; clock ticks of 1/100 s), or "?".
func cpuSeconds(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "?"
	}
	// The fields after the command's name (in parentheses, which may
	// hold spaces): utime and stime are the 12th and 13th.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 13 {
		return "?"
	}
	u, err1 := strconv.Atoi(f[11])
	s, err2 := strconv.Atoi(f[12])
	if err1 != nil || err2 != nil {
		return "?"
	}
	return strconv.FormatFloat(float64(u+s)/100, 'f', 1, 64)
}
