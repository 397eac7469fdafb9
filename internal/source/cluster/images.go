package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/value"
)

// Images is the engine's ImageReader in the cluster (Kyverno's
// image.GetMetadata): it reads an image's manifest (the platform's,
// linux/amd64, of an index) and config from its registry with
// go-containerregistry, anonymously or with Keychain, and gives them as
// Kyverno does: image, resolvedImage, registry, repository, identifier,
// tag or digest, imageIndex (for an index), manifest, config. Each image
// is bounded by Timeout, each response by MaxBytes; an image's data is
// reused for TTL (errors are not kept) and concurrent reads of one image
// share one. Registries, when not empty, lists the registries images may
// be read from; a registry that resolves to a loopback, link-local
// (cloud metadata), unspecified or multicast address is reached only when
// Registries lists it: an image name in a pod is the pod author's choice,
// and must not make the operator probe its own network.
type Images struct {
	// Registries are the registries (host or host:port, as in the image
	// name; index.docker.io for Docker Hub) images may be read from;
	// empty: any registry.
	Registries []string
	// Timeout bounds the reads of one image; default 10 s.
	Timeout time.Duration
	// MaxBytes bounds one response (a manifest, an index, a config);
	// default 4 MiB.
	MaxBytes int64
	// TTL is how long an image's data is reused; 0: not at all.
	TTL time.Duration
	// Keychain authenticates to registries; nil: anonymous.
	Keychain authn.Keychain
	// Transport makes the requests; nil: a transport of its own (no
	// proxy, the address check above on every connection).
	Transport http.RoundTripper
	// Now is the clock; default time.Now.
	Now func() time.Time

	cache     responses[imageData]
	transport struct {
		once sync.Once
		t    http.RoundTripper
	}
}

var _ engine.ImageReader = (*Images)(nil)

// ErrRegistryNotAllowed is in the chain of the error of a read from a
// registry Images.Registries does not list, or one at an address only a
// listed registry may have.
var ErrRegistryNotAllowed = errors.New("the registry is not allowed")

// ErrTooLarge is in the chain of the error of a registry response larger
// than Images.MaxBytes.
var ErrTooLarge = errors.New("the registry's response is too large")

func (im *Images) now() time.Time {
	if im.Now != nil {
		return im.Now()
	}
	return time.Now()
}

// ImageData reads ref's data.
func (im *Images) ImageData(ctx context.Context, ref string) (map[string]any, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, err
	}
	reg := r.Context().RegistryStr()
	if len(im.Registries) > 0 && !slices.Contains(im.Registries, reg) {
		return nil, fmt.Errorf("%w: %s (the operator's --image-registries lists those images are read from)", ErrRegistryNotAllowed, reg)
	}
	d, err := im.cache.get(ref, im.TTL, im.now, func() (imageData, error) { return im.read(ctx, ref, r) }, func(d imageData) int { return d.size })
	return d.data, err
}

// imageData is an image's data and the size of what was read for it.
type imageData struct {
	data map[string]any
	size int
}

func (im *Images) read(ctx context.Context, ref string, r name.Reference) (imageData, error) {
	timeout := im.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	kc := im.Keychain
	if kc == nil {
		kc = authn.NewMultiKeychain() // anonymous
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithTransport(im.roundTripper()), remote.WithRetryBackoff(remote.Backoff{Steps: 1})}
	desc, err := remote.Get(r, opts...)
	if err != nil {
		return imageData{}, err
	}
	out := map[string]any{"image": ref, "registry": r.Context().RegistryStr(), "repository": r.Context().RepositoryStr(), "identifier": r.Identifier()}
	digest := desc.Digest.String()
	if _, ok := r.(name.Tag); ok {
		out["tag"] = r.Identifier()
		out["resolvedImage"] = r.Context().Name() + ":" + r.Identifier() + "@" + digest
	} else {
		out["resolvedImage"] = r.Context().Name() + "@" + digest
	}
	out["digest"] = digest
	size := 0
	if desc.MediaType.IsIndex() {
		size += len(desc.Manifest)
		if out["imageIndex"], err = value.Decode(desc.Manifest); err != nil {
			return imageData{}, fmt.Errorf("the image index: %w", err)
		}
	}
	img, err := desc.Image() // an index's linux/amd64 image
	if err != nil {
		return imageData{}, err
	}
	manifest, err := img.RawManifest()
	if err != nil {
		return imageData{}, err
	}
	size += len(manifest)
	if out["manifest"], err = value.Decode(manifest); err != nil {
		return imageData{}, fmt.Errorf("the manifest: %w", err)
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return imageData{}, err
	}
	size += len(config)
	if out["config"], err = value.Decode(config); err != nil {
		return imageData{}, fmt.Errorf("the config: %w", err)
	}
	return imageData{data: out, size: size}, nil
}

// roundTripper bounds every response by MaxBytes.
func (im *Images) roundTripper() http.RoundTripper {
	im.transport.once.Do(func() {
		t := im.Transport
		if t == nil {
			d := &net.Dialer{Timeout: 5 * time.Second, Control: func(_, address string, _ syscall.RawConn) error { return im.checkAddress(address) }}
			t = &http.Transport{DialContext: d.DialContext, ForceAttemptHTTP2: true, MaxIdleConns: 16, IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 5 * time.Second}
		}
		limit := im.MaxBytes
		if limit <= 0 {
			limit = 4 << 20
		}
		im.transport.t = limitedTransport{t, limit}
	})
	return im.transport.t
}

// checkAddress refuses a connection to an address no image read should
// reach unless Registries lists it.
func (im *Images) checkAddress(address string) error {
	internal, err := unlistedInternal(address, im.Registries)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRegistryNotAllowed, err)
	}
	if internal {
		return fmt.Errorf("%w: %s (loopback, link-local and metadata addresses are reached only when --image-registries lists the address itself)", ErrRegistryNotAllowed, address)
	}
	return nil
}

// limitedTransport fails a response body past limit bytes.
type limitedTransport struct {
	base  http.RoundTripper
	limit int64
}

func (t limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > t.limit {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s: %d bytes (at most %d)", ErrTooLarge, req.URL.Redacted(), resp.ContentLength, t.limit)
	}
	resp.Body = &limitedBody{r: resp.Body, left: t.limit}
	return resp, nil
}

type limitedBody struct {
	r    io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One more byte says whether the body ends here.
		var one [1]byte
		if n, _ := b.r.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%w: more than the bound", ErrTooLarge)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.r.Close() }
