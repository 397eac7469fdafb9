// Package gatekeeperbench times Gatekeeper's own client (the constraint
// framework's client with Gatekeeper's K8sValidationTarget and its Rego
// driver, and its K8sNativeValidation driver, as gator verify builds them)
// on the same pod-security-policy templates, constraints and Pods as
// modwright's BenchmarkPSP and BenchmarkConstraintsMemory
// (internal/kinds/gatekeeper), for BENCHMARKS.md. A module of its own, so
// that Gatekeeper and its dependencies never enter modwright's: `make
// bench-gatekeeper` runs both sides one after the other.
package gatekeeperbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"testing"

	constraintclient "github.com/open-policy-agent/frameworks/constraint/pkg/client"
	"github.com/open-policy-agent/frameworks/constraint/pkg/client/drivers/rego"
	"github.com/open-policy-agent/frameworks/constraint/pkg/client/reviews"
	"github.com/open-policy-agent/gatekeeper/v3/apis"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/drivers/k8scel"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/gator/reader"
	mutationtypes "github.com/open-policy-agent/gatekeeper/v3/pkg/mutation/types"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/target"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// The shared library (MODWRIGHT_GATEKEEPER_LIBRARY_DIR, else
// ../shared/conformance/gatekeeper-library beside the repository) and the
// Pods modwright's benchmark reviews.
var (
	library  = filepath.Join(libraryDir(), "library", "pod-security-policy")
	podsFile = "../../testdata/bench/gatekeeper-pods.yaml"
)

func libraryDir() string {
	if d := os.Getenv("MODWRIGHT_GATEKEEPER_LIBRARY_DIR"); d != "" {
		return d
	}
	d, _ := filepath.Abs("../../../shared/conformance/gatekeeper-library")
	return d
}

func newClient(b *testing.B, withCEL bool) *constraintclient.Client {
	args := []constraintclient.Opt{constraintclient.Targets(&target.K8sValidationTarget{})}
	if withCEL {
		k, err := k8scel.New()
		if err != nil {
			b.Fatal(err)
		}
		args = append(args, constraintclient.Driver(k))
	}
	d, err := rego.New()
	if err != nil {
		b.Fatal(err)
	}
	args = append(args, constraintclient.Driver(d), constraintclient.EnforcementPoints(util.GatorEnforcementPoint))
	c, err := constraintclient.NewClient(args...)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// load adds each pod-security-policy template with its first sample
// constraint to c: how many.
func load(b *testing.B, c *constraintclient.Client) int {
	n := 0
	eachTemplate(b, func(add func(*constraintclient.Client) string) {
		add(c)
		n++
	})
	return n
}

// eachTemplate calls f for each pod-security-policy template with a
// sample constraint; add adds the template and its first constraint to a
// client and gives the constraint's name.
func eachTemplate(b *testing.B, f func(add func(*constraintclient.Client) string)) {
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		b.Fatal(err)
	}
	fsys := os.DirFS("/")
	ents, err := os.ReadDir(library)
	if os.IsNotExist(err) {
		b.Skipf("no Gatekeeper library at %s (MODWRIGHT_GATEKEEPER_LIBRARY_DIR)", library)
	}
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range ents {
		samples, _ := filepath.Glob(filepath.Join(library, e.Name(), "samples", "*", "constraint.yaml"))
		sort.Strings(samples)
		if len(samples) == 0 {
			continue
		}
		f(func(c *constraintclient.Client) string {
			t, err := reader.ReadTemplate(s, fsys, strings.TrimPrefix(filepath.Join(library, e.Name(), "template.yaml"), "/"))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.AddTemplate(context.Background(), t); err != nil {
				b.Fatal(err)
			}
			con, err := reader.ReadConstraint(fsys, strings.TrimPrefix(samples[0], "/"))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.AddConstraint(context.Background(), con); err != nil {
				b.Fatal(err)
			}
			return con.GetName()
		})
	}
}

func BenchmarkGatekeeperPSP(b *testing.B) {
	data, err := os.ReadFile(podsFile)
	if err != nil {
		b.Fatal(err)
	}
	pods, err := reader.ReadUnstructureds(data)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name string
		cel  bool
	}{{"rego", false}, {"cel", true}} {
		c := newClient(b, mode.cel)
		n := load(b, c)
		for i, name := range []string{"admitted", "violating"} {
			au := target.AugmentedUnstructured{Object: *pods[i].DeepCopy(), Source: mutationtypes.SourceTypeOriginal}
			b.Run(fmt.Sprintf("%s/constraints=%d/%s", mode.name, n, name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					resp, err := c.Review(context.Background(), au, reviews.EnforcementPoint(util.GatorEnforcementPoint))
					if err != nil {
						b.Fatal(err)
					}
					if (len(resp.Results()) == 0) != (name == "admitted") {
						b.Fatalf("%s: %d results", name, len(resp.Results()))
					}
				}
			})
		}
	}
}

// BenchmarkGatekeeperPSPEach: the admitted Pod against each template
// alone (with its first sample constraint, CEL as written), as
// modwright's BenchmarkPSPEach.
func BenchmarkGatekeeperPSPEach(b *testing.B) {
	data, err := os.ReadFile(podsFile)
	if err != nil {
		b.Fatal(err)
	}
	pods, err := reader.ReadUnstructureds(data)
	if err != nil {
		b.Fatal(err)
	}
	au := target.AugmentedUnstructured{Object: *pods[0].DeepCopy(), Source: mutationtypes.SourceTypeOriginal}
	eachTemplate(b, func(add func(*constraintclient.Client) string) {
		c := newClient(b, true)
		b.Run(add(c), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Review(context.Background(), au, reviews.EnforcementPoint(util.GatorEnforcementPoint)); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

// BenchmarkGatekeeperConstraintsMemory: the same 1,000 constraints of the
// required-labels template in Gatekeeper's client.
func BenchmarkGatekeeperConstraintsMemory(b *testing.B) {
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		b.Fatal(err)
	}
	fsys := os.DirFS("/")
	const n = 1000
	var cons []*unstructured.Unstructured
	for i := range n {
		text := fmt.Sprintf(`apiVersion: constraints.gatekeeper.sh/v1beta1
kind: K8sRequiredLabels
metadata: {name: labels-%d}
spec:
  match:
    kinds: [{apiGroups: [""], kinds: [Namespace]}]
    excludedNamespaces: ["kube-*"]
  parameters:
    message: "namespaces need an owner (%d)"
    labels: [{key: owner, allowedRegex: "^[a-z]+-%d$"}]
`, i, i, i)
		u, err := reader.ReadUnstructured([]byte(text))
		if err != nil {
			b.Fatal(err)
		}
		cons = append(cons, u)
	}
	b.ReportAllocs()
	var perConstraint float64
	for b.Loop() {
		before := heapInUse()
		c := newClient(b, false)
		t, err := reader.ReadTemplate(s, fsys, strings.TrimPrefix(filepath.Join(library, "..", "general", "requiredlabels", "template.yaml"), "/"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.AddTemplate(context.Background(), t); err != nil {
			b.Fatal(err)
		}
		for _, u := range cons {
			if _, err := c.AddConstraint(context.Background(), u.DeepCopy()); err != nil {
				b.Fatal(err)
			}
		}
		perConstraint = float64(heapInUse()-before) / n
		goruntime.KeepAlive(c)
	}
	b.ReportMetric(perConstraint, "heap-bytes/constraint")
}

func heapInUse() uint64 {
	goruntime.GC()
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return m.HeapAlloc
}
