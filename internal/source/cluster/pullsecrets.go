package cluster

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	kauth "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PullSecrets is a Keychain over the operator's image pull secrets
// (Kyverno's --imagePullSecrets): Secrets of type
// kubernetes.io/dockerconfigjson (or dockercfg) of the operator's
// namespace, read when a registry asks for credentials (so that rotated
// credentials are used; Images keeps an image's data for its TTL) and
// matched to the registry as the kubelet matches them
// (go-containerregistry's k8schain). A registry none of them names is
// read anonymously; a Secret that cannot be read is the read's error.
type PullSecrets struct {
	// Reader reads the Secrets (the API server, not a cache: the operator
	// may get these Secrets by name, not list every Secret).
	Reader    client.Reader
	Namespace string
	Names     []string
}

var _ authn.ContextKeychain = (*PullSecrets)(nil)

// Resolve resolves target's credentials (no deadline: ResolveContext is
// what registry reads call).
func (p *PullSecrets) Resolve(target authn.Resource) (authn.Authenticator, error) {
	return p.ResolveContext(context.Background(), target)
}

// ResolveContext resolves target's credentials from the Secrets.
func (p *PullSecrets) ResolveContext(ctx context.Context, target authn.Resource) (authn.Authenticator, error) {
	secrets := make([]corev1.Secret, 0, len(p.Names))
	for _, name := range p.Names {
		var s corev1.Secret
		if err := p.Reader.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, &s); err != nil {
			return nil, fmt.Errorf("image pull secret %s/%s: %w", p.Namespace, name, err)
		}
		secrets = append(secrets, s)
	}
	kc, err := kauth.NewFromPullSecrets(ctx, secrets)
	if err != nil {
		return nil, fmt.Errorf("image pull secrets: %w", err)
	}
	return authn.Resolve(ctx, kc, target)
}
