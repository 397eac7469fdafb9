package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/modwright/modwright/internal/cli"
)

// TestSandbox runs `modwright sandbox` as a newcomer would: wait for the
// kubeconfig, apply a rule and an object, see the object patched, interrupt.
func TestSandbox(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		startCluster(t, false) // skips or fails as the other e2e tests do
	}
	kc := filepath.Join(t.TempDir(), "sandbox.kubeconfig")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errs := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- cli.ExecuteContext(ctx, []string{"sandbox", "--kubeconfig-out", kc}, cli.Streams{In: strings.NewReader(""), Out: out, Err: errs})
	}()
	start := time.Now()
	eventually(t, 2*time.Minute, func() error {
		select {
		case code := <-done:
			t.Fatalf("sandbox exited with %d:\n%s", code, errs.tail(30))
		default:
		}
		if _, err := os.Stat(kc); err != nil {
			return err
		}
		return nil
	})
	t.Logf("sandbox ready after %s", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(out.tail(20), "export KUBECONFIG="+kc) {
		t.Errorf("instructions missing:\n%s", out.tail(20))
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, modRule(t, "default", "owner", `
type: Patch
match:
  - select: '$.kind'
    matchValue: ConfigMap
patch:
  - op: add
    path: /metadata/labels/owner
    value: sandbox
`)); err != nil {
		t.Fatal(err)
	}
	waitLabel(t, c, func() client.Object { return configMap("default", "probe", nil) }, "owner", "sandbox")
	// kinitiras' own webhook (objects labeled as kinitiras installs it) is
	// registered and must be served: its failurePolicy is Fail.
	if err := c.Create(ctx, configMap("default", "kinitiras-labeled", map[string]string{"kinitiras.kcloudlabs.io/webhook": "enabled"})); err != nil {
		t.Errorf("an object kinitiras' webhook selects: %v", err)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("sandbox exited with %d:\n%s", code, errs.tail(30))
		}
	case <-time.After(time.Minute):
		t.Fatal("sandbox did not stop")
	}
	if _, err := os.Stat(kc); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("kubeconfig left behind: %v", err)
	}
}
