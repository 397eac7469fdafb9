package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/api/v1alpha1"
	"github.com/modwright/modwright/api/v1beta1"
	"github.com/modwright/modwright/deploy"
	"github.com/modwright/modwright/internal/cli"
)

const (
	operatorNS   = "modwright-system"
	clusterNS    = "kubemod-system"
	operatorUser = "system:serviceaccount:" + operatorNS + ":modwright"
)

// cluster is one envtest control plane with modwright's objects installed.
type cluster struct {
	env        *envtest.Environment
	cfg        *rest.Config
	c          client.Client // administrator
	kubeconfig string        // the operator's (its service account's RBAC)
	lb         *balancer     // the webhook configurations point here
	dir        string
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = v1beta1.AddToScheme(s)
	_ = v1alpha1.AddToScheme(s)
	_ = apiextv1.AddToScheme(s)
	return s
}

// startCluster starts etcd and kube-apiserver and, with install, deploy/'s
// namespace and bundle (RBAC, webhook configurations pointing at a local
// balancer, Service, Deployment: inert without a controller manager) but not
// the CRDs. It also makes a kubeconfig for the operator's service account.
func startCluster(t *testing.T, install bool) *cluster {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		if os.Getenv("MODWRIGHT_E2E") == "1" {
			t.Fatal("KUBEBUILDER_ASSETS is not set (make e2e sets it with hack/envtest-assets.sh)")
		}
		t.Skip("KUBEBUILDER_ASSETS not set; run make e2e")
	}
	cl := &cluster{dir: t.TempDir(), env: &envtest.Environment{BinaryAssetsDirectory: assets}}
	cfg, err := cl.env.Start()
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := cl.env.Stop(); err != nil {
			t.Logf("stopping the control plane: %v", err)
		}
	})
	cl.cfg = cfg
	cl.c, err = client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	user, err := cl.env.AddUser(envtest.User{Name: operatorUser, Groups: []string{"system:serviceaccounts", "system:authenticated"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	cl.kubeconfig = filepath.Join(cl.dir, "operator.kubeconfig")
	if err := os.WriteFile(cl.kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	for _, ns := range []string{clusterNS} {
		if err := cl.c.Create(ctx, &corev1.Namespace{ObjectMeta: metaName(ns)}); err != nil {
			t.Fatal(err)
		}
	}
	if !install {
		return cl
	}
	cl.lb = newBalancer(t)
	for _, u := range cl.manifests(t, deploy.Bundle, "namespace.yaml") {
		if err := cl.c.Patch(ctx, u, client.Apply, client.FieldOwner("e2e"), client.ForceOwnership); err != nil {
			t.Fatalf("applying %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	return cl
}

// manifests decodes YAML documents (plus deploy/'s extra files). When the
// cluster has a balancer, webhook client configurations point at it instead
// of the Service.
func (cl *cluster) manifests(t *testing.T, data []byte, extra ...string) []*unstructured.Unstructured {
	t.Helper()
	for _, f := range extra {
		b, err := os.ReadFile(filepath.Join("..", "..", "deploy", f))
		if err != nil {
			t.Fatal(err)
		}
		data = append(append(b, "\n---\n"...), data...)
	}
	var out []*unstructured.Unstructured
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("%v in:\n%s", err, doc)
		}
		if len(u.Object) == 0 {
			continue
		}
		if k := u.GetKind(); cl.lb != nil && (k == "MutatingWebhookConfiguration" || k == "ValidatingWebhookConfiguration") {
			hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			for _, h := range hooks {
				hm := h.(map[string]any)
				cc := hm["clientConfig"].(map[string]any)
				svc := cc["service"].(map[string]any)
				cc["url"] = "https://" + cl.lb.addr + svc["path"].(string)
				delete(cc, "service")
			}
			_ = unstructured.SetNestedSlice(u.Object, hooks, "webhooks")
		}
		out = append(out, u)
	}
	return out
}

// installCRDs installs the CRDs of every rule kind (deploy.CRDs: ModRule,
// Policy, ClusterPolicy) and waits until they are served.
func (cl *cluster) installCRDs(t *testing.T) {
	t.Helper()
	var crds []*apiextv1.CustomResourceDefinition
	for _, data := range deploy.CRDs() {
		crd := &apiextv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			t.Fatal(err)
		}
		crds = append(crds, crd)
	}
	if _, err := envtest.InstallCRDs(cl.cfg, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
		t.Fatalf("installing the CRDs: %v", err)
	}
}

// operator is one `modwright serve` replica running in this process.
type operator struct {
	name      string
	webhook   string // host:port
	probes    string
	cancel    context.CancelFunc
	done      chan int
	log       *syncBuffer
	stopped   bool
	stopMutex sync.Mutex
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startOperator runs `modwright serve` with the operator's kubeconfig and
// adds it to the balancer once it is listening.
func (cl *cluster) startOperator(t *testing.T, name string, extra ...string) *operator {
	t.Helper()
	wp, pp := freePort(t), freePort(t)
	op := &operator{
		name: name, webhook: "127.0.0.1:" + strconv.Itoa(wp), probes: "127.0.0.1:" + strconv.Itoa(pp),
		done: make(chan int, 1), log: &syncBuffer{},
	}
	args := append([]string{"serve",
		"--kubeconfig", cl.kubeconfig,
		"--namespace", operatorNS,
		"--webhook-port", strconv.Itoa(wp), "--bind-address", "127.0.0.1",
		"--cert-host", "127.0.0.1",
		"--metrics-bind-address", "0",
		"--health-probe-bind-address", op.probes,
		"--log-format", "text", "--v", "1",
		"--kinitiras-paths", // as the Helm chart's default (kinitiras.webhooks)
	}, extra...)
	ctx, cancel := context.WithCancel(context.Background())
	op.cancel = cancel
	go func() {
		op.done <- cli.ExecuteContext(ctx, args, cli.Streams{In: strings.NewReader(""), Out: op.log, Err: op.log})
	}()
	t.Cleanup(func() { op.stop(t) })
	return op
}

func (op *operator) stop(t *testing.T) {
	op.stopMutex.Lock()
	defer op.stopMutex.Unlock()
	if op.stopped {
		return
	}
	op.stopped = true
	op.cancel() // SIGTERM
	// The shutdown delay (5s) plus the drain bound (--review-timeout + 5s).
	select {
	case code := <-op.done:
		if code != 0 {
			t.Errorf("operator %s exited with %d; log:\n%s", op.name, code, op.log.tail(40))
		}
	case <-time.After(60 * time.Second):
		t.Errorf("operator %s did not stop; log:\n%s", op.name, op.log.tail(40))
	}
	if t.Failed() {
		t.Logf("operator %s log:\n%s", op.name, op.log.tail(60))
	}
}

// ready reports the operator's /readyz answer.
func (op *operator) ready() (bool, string) {
	resp, err := http.Get("http://" + op.probes + "/readyz?verbose")
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK, string(body)
}

func (op *operator) waitReady(t *testing.T) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		select {
		case code := <-op.done:
			op.done <- code
			return fmt.Errorf("operator exited with %d", code)
		default:
		}
		if ok, body := op.ready(); !ok {
			return errors.New(body)
		}
		return nil
	}, func() string { return op.log.tail(30) })
}

// eventually retries f until it succeeds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, f func() error, context ...func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			msg := ""
			for _, c := range context {
				msg += "\n" + c()
			}
			t.Fatalf("not after %s: %v%s", timeout, err, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) tail(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	lines := strings.Split(strings.TrimRight(s.b.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// balancer is a TCP load balancer standing in for the webhook Service: it
// spreads connections over the live replicas and skips ones that refuse.
type balancer struct {
	addr     string
	mu       sync.Mutex
	backends []string
	next     int
}

func newBalancer(t *testing.T) *balancer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &balancer{addr: l.Addr().String()}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go b.serve(c)
		}
	}()
	return b
}

func (b *balancer) add(addr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backends = append(b.backends, addr)
}

func (b *balancer) remove(addr string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, a := range b.backends {
		if a == addr {
			b.backends = append(b.backends[:i:i], b.backends[i+1:]...)
			return
		}
	}
}

func (b *balancer) serve(c net.Conn) {
	defer c.Close()
	b.mu.Lock()
	backends := append([]string(nil), b.backends...)
	start := b.next
	b.next++
	b.mu.Unlock()
	for i := range backends {
		up, err := net.DialTimeout("tcp", backends[(start+i)%len(backends)], time.Second)
		if err != nil {
			continue
		}
		defer up.Close()
		done := make(chan struct{}, 2)
		go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
		go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
		<-done // either side closed: close both
		return
	}
}

// setFailurePolicy changes the dragnet's failure policy, in the mutating
// and the validating configuration.
func (cl *cluster) setFailurePolicy(t *testing.T, p admissionregv1.FailurePolicyType) {
	t.Helper()
	eventually(t, 10*time.Second, func() error {
		var mw admissionregv1.MutatingWebhookConfiguration
		if err := cl.c.Get(context.Background(), client.ObjectKey{Name: "modwright"}, &mw); err != nil {
			return err
		}
		for i := range mw.Webhooks {
			if mw.Webhooks[i].Name == dragnetWebhook {
				mw.Webhooks[i].FailurePolicy = &p
			}
		}
		return cl.c.Update(context.Background(), &mw)
	})
	eventually(t, 10*time.Second, func() error {
		var vw admissionregv1.ValidatingWebhookConfiguration
		if err := cl.c.Get(context.Background(), client.ObjectKey{Name: "modwright"}, &vw); err != nil {
			return err
		}
		for i := range vw.Webhooks {
			if vw.Webhooks[i].Name == dragnetWebhook {
				vw.Webhooks[i].FailurePolicy = &p
			}
		}
		return cl.c.Update(context.Background(), &vw)
	})
}

// dragnetWebhook is the dragnet's name in both configurations.
const dragnetWebhook = "dragnet.modwright.io"

// storeUnvalidated creates a rule while nothing validates it (as under
// KubeMod, or before modwright was installed): it removes the validating
// webhook configuration, creates obj, and restores deploy/'s.
func (cl *cluster) storeUnvalidated(t *testing.T, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	var vw admissionregv1.ValidatingWebhookConfiguration
	if err := cl.c.Get(ctx, client.ObjectKey{Name: "modwright"}, &vw); err != nil {
		t.Fatal(err)
	}
	if err := cl.c.Delete(ctx, &vw); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error { return cl.c.Create(ctx, obj) })
	for _, u := range cl.manifests(t, deploy.Bundle) {
		if u.GetKind() == "ValidatingWebhookConfiguration" {
			if err := cl.c.Create(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// readyCondition waits until the operator has written the status of a rule
// of any kind for its current generation, and returns its Ready condition.
func readyCondition(t *testing.T, c client.Client, rule client.Object) metav1.Condition {
	t.Helper()
	gvk, err := c.GroupVersionKindFor(rule)
	if err != nil {
		t.Fatal(err)
	}
	var cond metav1.Condition
	eventually(t, 15*time.Second, func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(rule), u); err != nil {
			return err
		}
		var st struct {
			ObservedGeneration int64              `json:"observedGeneration"`
			Conditions         []metav1.Condition `json:"conditions"`
		}
		raw, _, _ := unstructured.NestedMap(u.Object, "status")
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st); err != nil {
			return err
		}
		c := meta.FindStatusCondition(st.Conditions, "Ready")
		if c == nil || st.ObservedGeneration != u.GetGeneration() {
			return fmt.Errorf("status %+v at generation %d", st, u.GetGeneration())
		}
		cond = *c
		return nil
	})
	return cond
}
