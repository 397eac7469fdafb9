package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestReplicaShutdown: two replicas behind the balancer, one stopped
// (SIGTERM) during a stream of creates. The stopping replica turns unready,
// the balancer drops it as a Service's endpoints would (existing
// connections stay, as with kube-proxy), it keeps serving through its
// shutdown delay, then says GOAWAY and finishes its reviews in flight: no
// create may fail. make e2e-shutdown-stress runs it 20 times with the CPUs
// busy.
func TestReplicaShutdown(t *testing.T) {
	cl := startCluster(t, true)
	cl.installCRDs(t)
	ctx := context.Background()
	c := cl.c
	// a alone first, so that the API server's connection goes to a: the
	// replica that will be stopped has the traffic.
	a, b := cl.startOperator(t, "a"), cl.startOperator(t, "b")
	a.waitReady(t)
	cl.lb.add(a.webhook)
	// The first writes wait for the caBundle the leader injects.
	eventually(t, 30*time.Second, func() error {
		return client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metaName("stream")}))
	})
	rule := modRule(t, "stream", "scope", `
type: Patch
match:
  - select: '$.kind'
    matchValue: ConfigMap
patch:
  - op: add
    path: /metadata/labels/scope
    value: cluster
`)
	eventually(t, 30*time.Second, func() error { return client.IgnoreAlreadyExists(c.Create(ctx, rule.DeepCopy())) })
	waitLabel(t, c, func() client.Object { return configMap("stream", "probe", nil) }, "scope", "cluster")
	b.waitReady(t)
	cl.lb.add(b.webhook)

	// The endpoints: a replica leaves the balancer once its /readyz fails.
	endpoints, stopEndpoints := context.WithCancel(ctx)
	defer stopEndpoints()
	unready := make(chan time.Time, 1)
	go func() {
		for endpoints.Err() == nil {
			if ok, _ := a.ready(); !ok {
				cl.lb.remove(a.webhook)
				unready <- time.Now()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	var created, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				cm := configMap("stream", fmt.Sprintf("stream-%d-%d", w, i), nil)
				if err := c.Create(ctx, cm); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				if cm.Labels["scope"] != "cluster" {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Errorf("%s not patched", cm.Name))
				}
				created.Add(1)
			}
		})
	}
	time.Sleep(time.Second)
	before := created.Load()
	stopped := time.Now()
	a.stop(t)
	took := time.Since(stopped)
	time.Sleep(time.Second) // the stream goes on with b alone
	close(stop)
	wg.Wait()
	t.Logf("%d creates (%d before the stop), %d failed; replica a stopped in %s during the stream, answering %d reviews while stopping",
		created.Load(), before, failed.Load(), took.Round(time.Millisecond), answeredWhileStopping(a.log.String()))
	select {
	case at := <-unready:
		if at.After(stopped.Add(took)) {
			t.Errorf("replica a reported unready only after it exited")
		}
		t.Logf("replica a unready %s after the stop", at.Sub(stopped).Round(time.Millisecond))
	default:
		t.Error("replica a never reported unready")
	}
	if failed.Load() > 0 {
		t.Errorf("%d creates failed; first: %v", failed.Load(), firstErr.Load())
	}
	if created.Load() <= before {
		t.Errorf("no create after the stop (%d in all)", created.Load())
	}
	if n := answeredWhileStopping(a.log.String()); n <= 0 {
		t.Errorf("replica a answered %d reviews after its shutdown began; the test did not exercise the shutdown delay", n)
	}

	// Stopping without reviews in flight takes the shutdown delay.
	stopped = time.Now()
	b.stop(t)
	t.Logf("replica b stopped in %s without traffic", time.Since(stopped).Round(time.Millisecond))
}

// answeredWhileStopping counts the reviews a replica's log shows patched
// after its shutdown began (-1: it never began).
func answeredWhileStopping(log string) int {
	i := strings.Index(log, "shutting down: not ready")
	if i < 0 {
		return -1
	}
	return strings.Count(log[i:], "msg=patched")
}
