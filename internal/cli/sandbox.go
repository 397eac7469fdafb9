package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/spf13/cobra"

	"github.com/modwright/modwright/deploy"
)

type sandboxOptions struct {
	kubeconfigOut string
	assets        string
	webhookPort   int
	logFormat     string
	verbosity     int
}

func newSandboxCmd(s Streams) *cobra.Command {
	o := &sandboxOptions{}
	cmd := &cobra.Command{
		Use:   "sandbox [--kubeconfig-out PATH]",
		Short: "Run a throwaway control plane with modwright's admission wired in",
		Long: `sandbox starts a throwaway Kubernetes control plane (etcd and kube-apiserver,
no nodes, no controllers) with modwright's operator running in this process
behind real webhook configurations (the ones deploy/ installs, pointed at
127.0.0.1), installs the CRDs (ModRule, ModwrightPolicy, ClusterModwrightPolicy), writes an
administrator kubeconfig to --kubeconfig-out and runs until interrupted; then
it stops everything and removes the kubeconfig and the control plane's data.

The control plane binaries are the ones 'make test' uses: --assets, else
$KUBEBUILDER_ASSETS, else <repo>/.cache/envtest/bin, built by
hack/envtest-assets.sh when missing (several minutes the first time; run it
from a modwright clone).

Nothing runs pods here: use it to try rules on objects you create, update
and delete (Deployments, ConfigMaps, Namespaces, ...). Cluster-wide rules go
in the kubemod-system namespace, which the sandbox creates.`,
		Example: `  modwright sandbox &
  export KUBECONFIG=$PWD/sandbox.kubeconfig
  kubectl apply -f examples/rules/harden-nginx.yaml
  kubectl apply -f examples/manifests/web.yaml
  kubectl get deployment web -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSandbox(cmd.Context(), o, s)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfigOut, "kubeconfig-out", "sandbox.kubeconfig", "where to write the administrator kubeconfig")
	f.StringVar(&o.assets, "assets", "", "directory holding etcd and kube-apiserver (default: $KUBEBUILDER_ASSETS, else <repo>/.cache/envtest/bin)")
	f.IntVar(&o.webhookPort, "webhook-port", 0, "port of the webhooks on 127.0.0.1 (0: any free port)")
	f.StringVar(&o.logFormat, "log-format", "text", "operator log format: json or text")
	f.IntVarP(&o.verbosity, "v", "v", 0, "operator log verbosity")
	return cmd
}

// sandboxAssets finds (or builds) the etcd and kube-apiserver binaries.
func sandboxAssets(o *sandboxOptions, stderr io.Writer) (string, error) {
	if o.assets != "" {
		return o.assets, nil
	}
	if a := os.Getenv("KUBEBUILDER_ASSETS"); a != "" {
		return a, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		script := filepath.Join(dir, "hack", "envtest-assets.sh")
		if _, err := os.Stat(script); err == nil {
			bin := filepath.Join(dir, ".cache", "envtest", "bin")
			if hasBinaries(bin) {
				return bin, nil
			}
			fmt.Fprintln(stderr, "sandbox: building the control plane binaries with hack/envtest-assets.sh (several minutes the first time)...")
			var out bytes.Buffer
			cmd := exec.Command(script)
			cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, stderr
			if err := cmd.Run(); err != nil {
				return "", fmt.Errorf("hack/envtest-assets.sh: %w", err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			return lines[len(lines)-1], nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", usageError("no control plane binaries: pass --assets DIR or set KUBEBUILDER_ASSETS, or run from a modwright clone (hack/envtest-assets.sh builds them)")
		}
		dir = parent
	}
}

func hasBinaries(dir string) bool {
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
			return false
		}
	}
	return true
}

func runSandbox(ctx context.Context, o *sandboxOptions, s Streams) error {
	if ctx == nil {
		ctx = context.Background()
	}
	log, err := newLogger(o.logFormat, o.verbosity, s.Err)
	if err != nil {
		return err
	}
	assets, err := sandboxAssets(o, s.Err)
	if err != nil {
		return err
	}
	started := time.Now()
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		return &ExitError{Code: 1, Err: fmt.Errorf("starting the control plane (assets in %s): %w", assets, err)}
	}
	defer func() {
		if err := env.Stop(); err != nil {
			log.Error(err, "stopping the control plane")
		}
	}()
	c, err := prepareSandbox(ctx, cfg)
	if err != nil {
		return err
	}

	port := o.webhookPort
	if port == 0 {
		if port, err = freeLocalPort(); err != nil {
			return err
		}
	}
	probePort, err := freeLocalPort()
	if err != nil {
		return err
	}
	so := &serveOptions{}
	if err := newServeCmdWith(s, so).ParseFlags(sandboxServeArgs(o, port, probePort)); err != nil {
		return err
	}
	so.operator.restConfig = cfg

	opCtx, stopOperator := context.WithCancel(ctx)
	defer stopOperator()
	opDone := make(chan error, 1)
	go func() { opDone <- runOperator(opCtx, so, log.WithName("operator"), nil) }()

	// The webhook configurations deploy/ installs, pointed at this process.
	for _, u := range bundleObjects(deploy.Bundle) {
		if k := u.GetKind(); k != "MutatingWebhookConfiguration" && k != "ValidatingWebhookConfiguration" {
			continue
		}
		pointAt(u, "https://127.0.0.1:"+strconv.Itoa(port))
		if err := c.Create(ctx, u); err != nil {
			return fmt.Errorf("creating %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	if err := waitReady(ctx, "http://"+so.operator.probeAddr+"/readyz", opDone); err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	// Ready means the operator serves; the API server also has to trust it
	// (the caBundle the operator injects reaches the API server's webhook
	// cache a moment later): the sandbox is ready once admission works.
	if err := waitAdmission(ctx, c, opDone); err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	out, err := writeSandboxKubeconfig(env, o.kubeconfigOut)
	if err != nil {
		return err
	}
	defer os.Remove(out)
	fmt.Fprintf(s.Out, sandboxReady, time.Since(started).Round(100*time.Millisecond), cfg.Host, port, out, defaultClusterRulesNamespace)

	select {
	case <-ctx.Done():
	case err := <-opDone:
		if err != nil {
			return &ExitError{Code: 1, Err: fmt.Errorf("the operator stopped: %w", err)}
		}
	}
	fmt.Fprintln(s.Err, "sandbox: stopping")
	stopOperator()
	if err := <-opDone; err != nil {
		log.Error(err, "operator shutdown")
	}
	return nil
}

// prepareSandbox installs modwright's CRDs and namespaces in the sandbox's
// control plane and returns a client of it.
func prepareSandbox(ctx context.Context, cfg *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), apiextv1.AddToScheme(scheme)); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	var crds []*apiextv1.CustomResourceDefinition
	for _, data := range deploy.CRDs() {
		crd := &apiextv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			return nil, err
		}
		crds = append(crds, crd)
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
		return nil, &ExitError{Code: 1, Err: fmt.Errorf("installing the CRDs: %w", err)}
	}
	for _, ns := range []corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: defaultNamespace, Labels: map[string]string{"admission.kubemod.io/ignore": "true"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: defaultClusterRulesNamespace}},
	} {
		if err := c.Create(ctx, &ns); err != nil {
			return nil, fmt.Errorf("creating namespace %s: %w", ns.Name, err)
		}
	}
	return c, nil
}

// writeSandboxKubeconfig writes the kubeconfig of an administrator of the
// sandbox to path and returns its absolute path.
func writeSandboxKubeconfig(env *envtest.Environment, path string) (string, error) {
	user, err := env.AddUser(envtest.User{Name: "sandbox-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", err
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	out, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(out, kc, 0o600); err != nil {
		return "", fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return out, nil
}

// sandboxReady is what the sandbox prints once admission works.
const sandboxReady = `modwright sandbox is ready (%s): Kubernetes API at %s, admission by this process on 127.0.0.1:%d.

  export KUBECONFIG=%s
  kubectl apply -f examples/rules/harden-nginx.yaml      # a ModRule (namespace default)
  kubectl apply -f examples/manifests/web.yaml           # patched on its way in
  kubectl get modrules -A                                # Ready column from the rule status

Cluster-wide rules go in namespace %s. Press Ctrl-C to stop; everything is removed.
`

func freeLocalPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitReady(ctx context.Context, url string, done <-chan error) error {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			return fmt.Errorf("the operator stopped before it was ready: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return errors.New("the operator was not ready after 2 minutes")
}

// waitAdmission waits until the API server calls modwright's webhooks
// successfully: a server-side dry run of a ModRule (the validating webhook)
// and of a ConfigMap (the dragnet) both succeed.
func waitAdmission(ctx context.Context, c client.Client, done <-chan error) error {
	probes := func() []client.Object {
		rule := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "api.kubemod.io/v1beta1", "kind": "ModRule",
			"metadata": map[string]any{"name": "sandbox-probe", "namespace": "default"},
			"spec":     map[string]any{"type": "Reject", "match": []any{map[string]any{"select": "$.kind", "matchValue": "SandboxProbe"}}},
		}}
		cm := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "sandbox-probe", "namespace": "default"},
		}}
		return []client.Object{rule, cm}
	}
	deadline := time.Now().Add(time.Minute)
	var last error
	for time.Now().Before(deadline) {
		last = nil
		for _, o := range probes() {
			if err := c.Create(ctx, o, client.DryRunAll); err != nil {
				last = err
				break
			}
		}
		if last == nil {
			return nil
		}
		select {
		case err := <-done:
			return fmt.Errorf("the operator stopped before admission worked: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("the API server could not call modwright's webhooks after a minute: %w", last)
}

// bundleObjects decodes the YAML documents of deploy's bundle.
func bundleObjects(data []byte) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil || len(u.Object) == 0 {
			continue
		}
		out = append(out, u)
	}
	return out
}

// sandboxServeArgs are serve's flags in the sandbox: as the bundle's
// Deployment sets them (so that the webhook configurations it registers
// call paths the server serves), then the sandbox's own.
func sandboxServeArgs(o *sandboxOptions, port, probePort int) []string {
	return append(bundleServeArgs(deploy.Bundle),
		"--webhook-port", strconv.Itoa(port), "--bind-address", "127.0.0.1", "--cert-host", "127.0.0.1",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "127.0.0.1:"+strconv.Itoa(probePort),
		"--leader-elect=false", "--log-format", o.logFormat, "--v", strconv.Itoa(o.verbosity),
		"--shutdown-delay=0", // nothing balances traffic to a sandbox: stop at once
	)
}

// bundleServeArgs are the flags the bundle's Deployment gives serve.
func bundleServeArgs(bundle []byte) []string {
	for _, u := range bundleObjects(bundle) {
		if u.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			args, _ := c.(map[string]any)["args"].([]any)
			if len(args) == 0 || args[0] != "serve" {
				continue
			}
			out := make([]string, 0, len(args)-1)
			for _, a := range args[1:] {
				out = append(out, fmt.Sprint(a))
			}
			return out
		}
	}
	return nil
}

// pointAt makes a webhook configuration call base+path instead of the Service.
func pointAt(u *unstructured.Unstructured, base string) {
	hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
	for _, h := range hooks {
		cc, _ := h.(map[string]any)["clientConfig"].(map[string]any)
		svc, _ := cc["service"].(map[string]any)
		path, _ := svc["path"].(string)
		cc["url"] = base + path
		delete(cc, "service")
	}
	_ = unstructured.SetNestedSlice(u.Object, hooks, "webhooks")
}
