package packs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// ArtifactType is a rule pack's OCI artifact type, as kubeatlas-rules
// publishes packs (`oras push REF --artifact-type ... metadata.yaml
// *.rego`: one layer per file, named by its title annotation).
const ArtifactType = "application/vnd.kubeatlas.rulepack.v1+yaml"

// fileMediaType is the media type of a pack's file layers (oras push's
// default for files).
const fileMediaType = "application/vnd.oci.image.layer.v1.tar"

// The limits of a pull (OCIOptions' defaults).
const (
	DefaultPullTimeout  = 30 * time.Second
	DefaultPullMaxBytes = 4 << 20
)

// ErrPull: an OCI pack could not be pulled (the registry, the network,
// the credentials); ErrTooLarge: it is larger than the limit.
var (
	ErrPull     = errors.New("pulling the rule pack failed")
	ErrTooLarge = errors.New("rule pack too large")
)

// OCIOptions are how packs are pulled and pushed.
type OCIOptions struct {
	// Credential gives a registry's credentials; nil: Docker's (the
	// config file and its credential helpers, as `docker login` left
	// them), anonymous when there is none.
	Credential auth.CredentialFunc
	// PlainHTTP talks HTTP, not HTTPS, to every registry; registries on
	// a loopback address (localhost, 127.0.0.1, ::1) are always reached
	// over HTTP.
	PlainHTTP bool
	Timeout   time.Duration // a pull's; 0: DefaultPullTimeout
	MaxBytes  int64         // a pack's files and manifest together; 0: DefaultPullMaxBytes
}

func (o OCIOptions) repository(ref string) (*remote.Repository, string, error) {
	repoName, tag, err := SplitRef(ref)
	if err != nil {
		return nil, "", err
	}
	repo, err := remote.NewRepository(repoName)
	if err != nil {
		return nil, "", fmt.Errorf("%w %q: %v", ErrInvalidRef, ref, err)
	}
	repo.PlainHTTP = o.PlainHTTP || loopback(repo.Reference.Registry)
	cred := o.Credential
	if cred == nil {
		if store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{}); err == nil {
			cred = credentials.Credential(store)
		}
	}
	repo.Client = &auth.Client{Client: retry.DefaultClient, Credential: cred, Cache: auth.NewCache()}
	return repo, tag, nil
}

// loopback reports whether a registry (host or host:port) is on a
// loopback address.
func loopback(registry string) bool {
	host := registry
	if h, _, err := net.SplitHostPort(registry); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Load loads a pack from a directory, from a registry (oci://REF) or
// from those modwright embeds (builtin:NAME).
func Load(ctx context.Context, source, engineVersion string, timeout time.Duration, oci OCIOptions) (*Pack, error) {
	switch {
	case strings.HasPrefix(source, "oci://"):
		return LoadOCI(ctx, source, engineVersion, timeout, oci)
	case strings.HasPrefix(source, builtinPrefix):
		return Builtin(ctx, strings.TrimPrefix(source, builtinPrefix), engineVersion, timeout)
	}
	return LoadDir(ctx, source, engineVersion, timeout)
}

// LoadOCI pulls the pack ref names (oci://registry/repository:semver,
// checked by SplitRef) into memory and loads it as LoadDir loads a
// directory: the files are the layers, by their title annotation. The
// pull has a time limit and a size limit (the manifest and every layer
// together); a layer's digest is verified as it is read.
func LoadOCI(ctx context.Context, ref, engineVersion string, timeout time.Duration, o OCIOptions) (*Pack, error) {
	repo, tag, err := o.repository(ref)
	if err != nil {
		return nil, err
	}
	limit := o.MaxBytes
	if limit <= 0 {
		limit = DefaultPullMaxBytes
	}
	wait := o.Timeout
	if wait <= 0 {
		wait = DefaultPullTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	store := memory.New()
	var total atomic.Int64
	opts := oras.DefaultCopyOptions
	opts.PreCopy = func(_ context.Context, desc ocispec.Descriptor) error {
		if total.Add(desc.Size) > limit {
			return fmt.Errorf("%w: %s is over %d bytes", ErrTooLarge, ref, limit)
		}
		return nil
	}
	manifest, err := oras.Copy(pctx, repo, tag, store, tag, opts)
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrPull, ref, err)
	}
	files, err := packFiles(pctx, store, manifest)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrPull, ref, err)
	}
	return load(ctx, ref, func(name string) ([]byte, error) {
		b, ok := files[filepath.ToSlash(filepath.Clean(name))]
		if !ok {
			return nil, fmt.Errorf("%s: no layer titled %q: %w", ref, name, fs.ErrNotExist)
		}
		return b, nil
	}, engineVersion, timeout)
}

// packFiles are a pulled pack's layers by title.
func packFiles(ctx context.Context, store content.Fetcher, manifest ocispec.Descriptor) (map[string][]byte, error) {
	var m ocispec.Manifest
	b, err := content.FetchAll(ctx, store, manifest)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("the manifest: %v", err)
	}
	files := map[string][]byte{}
	for _, l := range m.Layers {
		title := l.Annotations[ocispec.AnnotationTitle]
		if title == "" {
			continue
		}
		data, err := content.FetchAll(ctx, store, l)
		if err != nil {
			return nil, err
		}
		files[filepath.ToSlash(filepath.Clean(title))] = data
	}
	return files, nil
}

// Push publishes the pack in dir at ref as kubeatlas-rules publishes
// packs: metadata.yaml and the top-level .rego files, a layer each named
// by its title, artifact type ArtifactType. It returns the manifest's
// digest.
func Push(ctx context.Context, dir, ref string, o OCIOptions) (digest.Digest, error) {
	repo, tag, err := o.repository(ref)
	if err != nil {
		return "", err
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.rego"))
	if err != nil {
		return "", err
	}
	store := memory.New()
	var layers []ocispec.Descriptor
	for _, path := range append([]string{filepath.Join(dir, "metadata.yaml")}, names...) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		desc := content.NewDescriptorFromBytes(fileMediaType, b)
		desc.Annotations = map[string]string{ocispec.AnnotationTitle: filepath.Base(path)}
		if err := store.Push(ctx, desc, bytes.NewReader(b)); err != nil {
			return "", err
		}
		layers = append(layers, desc)
	}
	manifest, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, ArtifactType, oras.PackManifestOptions{Layers: layers})
	if err != nil {
		return "", err
	}
	if err := store.Tag(ctx, manifest, tag); err != nil {
		return "", err
	}
	if _, err := oras.Copy(ctx, store, tag, repo, tag, oras.DefaultCopyOptions); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	return manifest.Digest, nil
}
