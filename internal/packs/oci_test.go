package packs_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/bcrypt"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/packs"
	"github.com/modwright/modwright/internal/testtool"
	"github.com/modwright/modwright/internal/value"
)

const examplePack = "../../examples/rule-packs/config-bundles"

// sampleEdges are a pack's edges of the example's sample.
func sampleEdges(t *testing.T, p *packs.Pack) []packs.Edge {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(examplePack, "samples", "bundle.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := value.Decode(j)
	if err != nil {
		t.Fatal(err)
	}
	edges, errs := packs.NewRouter(p).Derive(context.Background(), obj.(map[string]any))
	if len(errs) > 0 || len(edges) == 0 {
		t.Fatalf("derive: %v %v", edges, errs)
	}
	return edges
}

// TestOCI pushes the example pack to a real registry as kubeatlas-rules
// publishes packs, pulls it back (oci://) and loads it: the same edges as
// from its directory. The limits and the reference rules hold.
func TestOCI(t *testing.T) {
	ctx := context.Background()
	addr := testtool.Registry(t, "")
	ref := "oci://" + addr + "/rules/config-bundles:0.1.0"
	if _, err := packs.Push(ctx, examplePack, ref, packs.OCIOptions{}); err != nil {
		t.Fatal(err)
	}
	fromDir, err := packs.LoadDir(ctx, examplePack, packs.KubeAtlasVersion, 0)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := packs.Load(ctx, ref, packs.KubeAtlasVersion, 0, packs.OCIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pulled.Name != "config-bundles" || len(pulled.Modules) != len(fromDir.Modules) {
		t.Fatalf("pulled %+v", pulled.Metadata)
	}
	if d := cmp.Diff(sampleEdges(t, fromDir), sampleEdges(t, pulled)); d != "" {
		t.Errorf("-directory +pulled:\n%s", d)
	}

	for _, c := range []struct {
		name string
		ref  string
		opts packs.OCIOptions
		want error
	}{
		{"latest refused", "oci://" + addr + "/rules/config-bundles:latest", packs.OCIOptions{}, packs.ErrInvalidRef},
		{"not semver", "oci://" + addr + "/rules/config-bundles:main", packs.OCIOptions{}, packs.ErrInvalidRef},
		{"no such tag", "oci://" + addr + "/rules/config-bundles:0.2.0", packs.OCIOptions{}, packs.ErrPull},
		{"over the size limit", ref, packs.OCIOptions{MaxBytes: 200}, packs.ErrTooLarge},
		{"nobody listening", "oci://127.0.0.1:1/rules/x:1.0.0", packs.OCIOptions{Timeout: 2 * time.Second}, packs.ErrPull},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := packs.LoadOCI(ctx, c.ref, packs.KubeAtlasVersion, 0, c.opts)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}

	t.Run("a pack for a newer engine", func(t *testing.T) {
		dir := t.TempDir()
		meta, err := os.ReadFile(filepath.Join(examplePack, "metadata.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		meta = []byte(strings.Replace(string(meta), `kubeatlas: ">= 1.0.0"`, `kubeatlas: ">= 9.0.0"`, 1))
		if err := os.WriteFile(filepath.Join(dir, "metadata.yaml"), meta, 0o600); err != nil {
			t.Fatal(err)
		}
		rego, err := os.ReadFile(filepath.Join(examplePack, "bundle.rego"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "bundle.rego"), rego, 0o600); err != nil {
			t.Fatal(err)
		}
		ref := "oci://" + addr + "/rules/future:9.0.0"
		if _, err := packs.Push(ctx, dir, ref, packs.OCIOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := packs.LoadOCI(ctx, ref, packs.KubeAtlasVersion, 0, packs.OCIOptions{}); !errors.Is(err, packs.ErrIncompatibleKubeAtlas) {
			t.Fatalf("got %v", err)
		}
	})
}

// TestOCICredentials: a registry that asks for credentials is reached
// with those `docker login` left in Docker's config ($DOCKER_CONFIG), and
// refuses a pull without them.
func TestOCICredentials(t *testing.T) {
	ctx := context.Background()
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	addr := testtool.Registry(t, "ci:"+string(hash)+"\n")
	ref := "oci://" + addr + "/rules/config-bundles:0.1.0"

	t.Setenv("DOCKER_CONFIG", t.TempDir())
	if _, err := packs.Push(ctx, examplePack, ref, packs.OCIOptions{}); err == nil {
		t.Fatal("pushed without credentials")
	}
	if _, err := packs.LoadOCI(ctx, ref, packs.KubeAtlasVersion, 0, packs.OCIOptions{}); !errors.Is(err, packs.ErrPull) {
		t.Fatalf("pulled without credentials: %v", err)
	}

	cfg := fmt.Sprintf(`{"auths": {%s: {"auth": %s}}}`, strconv.Quote(addr), strconv.Quote(base64.StdEncoding.EncodeToString([]byte("ci:s3cret"))))
	if err := os.WriteFile(filepath.Join(os.Getenv("DOCKER_CONFIG"), "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := packs.Push(ctx, examplePack, ref, packs.OCIOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := packs.LoadOCI(ctx, ref, packs.KubeAtlasVersion, 0, packs.OCIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "config-bundles" {
		t.Errorf("pulled %s", p.Name)
	}
}
