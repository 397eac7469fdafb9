package cluster_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/modwright/modwright/internal/source/cluster"
)

// TestImages: an image's data read from a registry (go-containerregistry's
// in-process one), as Kyverno's image.GetMetadata gives it; kept for the
// TTL; registries not listed, loopback addresses not listed and responses
// past the bound refused.
func TestImages(t *testing.T) {
	var requests atomic.Int64
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.Config.User = "1000"
	cfg.Created.Time = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host + "/team/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	digest, _ := img.Digest()

	now := time.Unix(0, 0)
	im := &cluster.Images{Registries: []string{host}, TTL: time.Minute, Now: func() time.Time { return now }}
	data, err := im.ImageData(context.Background(), host+"/team/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	config, _ := data["config"].(map[string]any)
	inner, _ := config["config"].(map[string]any)
	manifest, _ := data["manifest"].(map[string]any)
	if data["registry"] != host || data["repository"] != "team/app" || data["tag"] != "v1" || data["digest"] != digest.String() ||
		data["resolvedImage"] != host+"/team/app:v1@"+digest.String() || inner["User"] != "1000" ||
		config["created"] != "2026-03-01T00:00:00Z" || manifest["layers"] == nil {
		t.Errorf("image data %v", data)
	}
	n := requests.Load()
	if _, err := im.ImageData(context.Background(), host+"/team/app:v1"); err != nil || requests.Load() != n {
		t.Errorf("a second read within the TTL: %v, %d requests more", err, requests.Load()-n)
	}

	for _, tc := range []struct {
		name string
		im   *cluster.Images
		want error
	}{
		{"registry not listed", &cluster.Images{Registries: []string{"ghcr.io"}}, cluster.ErrRegistryNotAllowed},
		{"loopback not listed", &cluster.Images{}, cluster.ErrRegistryNotAllowed},
		{"too large", &cluster.Images{Registries: []string{host}, MaxBytes: 64}, cluster.ErrTooLarge},
	} {
		_, err := tc.im.ImageData(context.Background(), host+"/team/app:v1")
		if err == nil || (!errors.Is(err, tc.want) && !strings.Contains(err.Error(), tc.want.Error())) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}
