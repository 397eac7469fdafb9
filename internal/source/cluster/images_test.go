package cluster_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

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

// TestImagesPullSecrets: a registry that asks for credentials is read
// with those of the operator's image pull secrets that name it (a
// dockerconfigjson Secret, read when asked); without them, or with a
// Secret that is absent, the read fails saying so.
func TestImagesPullSecrets(t *testing.T) {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "robot" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="private"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(128, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host + "/team/private:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: "robot", Password: "s3cret"})); err != nil {
		t.Fatal(err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte("robot:s3cret"))
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry", Namespace: "modwright"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths": {"` + host + `": {"auth": "` + auth + `"}}}`)}}
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "modwright"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths": {"ghcr.io": {"auth": "` + auth + `"}}}`)}}
	reader := fake.NewClientBuilder().WithObjects(secret, other).Build()
	for _, tc := range []struct {
		name    string
		kc      authn.Keychain
		wantErr string
	}{
		{"pull secret", &cluster.PullSecrets{Reader: reader, Namespace: "modwright", Names: []string{"other", "registry"}}, ""},
		{"anonymous", nil, "401 Unauthorized"},
		{"another registry's", &cluster.PullSecrets{Reader: reader, Namespace: "modwright", Names: []string{"other"}}, "401 Unauthorized"},
		{"absent", &cluster.PullSecrets{Reader: reader, Namespace: "modwright", Names: []string{"missing"}}, "image pull secret modwright/missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im := &cluster.Images{Registries: []string{host}, Keychain: tc.kc}
			data, err := im.ImageData(context.Background(), host+"/team/private:v1")
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr == "" && data["repository"] != "team/private":
				t.Errorf("data %v", data)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}
