package controller

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/modwright/modwright/internal/certs"
)

// Keys of the serving-certificate Secret (the kubernetes.io/tls layout
// cert-manager also writes, plus the CA key when modwright manages it).
const (
	SecretCAKey    = "ca.crt"
	SecretCAKeyKey = "ca.key"
)

// ErrNoCertificate is returned by CertProvider before a usable serving
// certificate exists in the Secret.
var ErrNoCertificate = errors.New("no serving certificate yet")

// CertProvider gives every replica's webhook server its serving
// certificate, read from the Secret through the (namespace- and
// name-restricted) informer cache, so a rotation reaches all replicas
// within seconds and no file mount is needed.
type CertProvider struct {
	Reader client.Reader
	Secret types.NamespacedName

	mu   sync.Mutex
	rv   string
	cert *tls.Certificate
}

// GetCertificate is a tls.Config.GetCertificate.
func (p *CertProvider) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return p.load(context.Background())
}

// Ready reports an error until a serving certificate is available (for
// the readiness check).
func (p *CertProvider) Ready() error {
	_, err := p.load(context.Background())
	return err
}

func (p *CertProvider) load(ctx context.Context) (*tls.Certificate, error) {
	var s corev1.Secret
	if err := p.Reader.Get(ctx, p.Secret, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: Secret %s not found", ErrNoCertificate, p.Secret)
		}
		return nil, fmt.Errorf("%w: Secret %s: %v", ErrNoCertificate, p.Secret, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cert != nil && p.rv == s.ResourceVersion {
		return p.cert, nil
	}
	pair, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("%w: Secret %s: %v", ErrNoCertificate, p.Secret, err)
	}
	p.cert, p.rv = &pair, s.ResourceVersion
	return p.cert, nil
}

// WebhookConfigs name the webhook configurations the operator keeps correct.
type WebhookConfigs struct {
	Mutating   string // MutatingWebhookConfiguration name ("" : none)
	Validating string // ValidatingWebhookConfiguration name ("" : none)
	// DragnetWebhook is the name of the dragnet webhook inside Mutating
	// (its mutations) and Validating (its validations); its rules are set
	// to DragnetRules in both when DragnetRules is not nil.
	DragnetWebhook string
	DragnetRules   []admissionv1.RuleWithOperations
	// DragnetFailurePolicy is the dragnet's failure policy once armed
	// ("": the configuration's is left alone). The chart installs the
	// dragnet with Ignore and the annotation ArmedAnnotation "false", so
	// that no write fails while no replica answers (an image that cannot
	// be pulled, a first start); the leader arms it, once, when the
	// caBundle is in place and the operator is ready, and marks it "true":
	// a policy set by hand afterwards is respected.
	DragnetFailurePolicy admissionv1.FailurePolicyType
}

// ArmedAnnotation marks a webhook configuration whose dragnet the
// operator has armed ("true") or is to arm ("false").
const ArmedAnnotation = "modwright.io/armed"

// CertManager (leader only) keeps a CA and serving certificate in the
// Secret, renews them RenewBefore their expiry, and keeps the caBundle of
// every webhook in the named configurations (and the dragnet's target
// resources) correct, re-injecting them whenever someone overwrites them.
// On renewal the previous CA stays in the bundle while it is valid, so
// that replicas still serving the old certificate keep working.
type CertManager struct {
	// Client reads (from the informer cache, in the operator) and writes.
	Client client.Client
	// Informers signal changes of the Secret and configurations.
	Informers cache.Informers
	Secret    types.NamespacedName
	Hosts     []string
	Configs   WebhookConfigs
	// Generate: false leaves the Secret to someone else (cert-manager) and
	// only keeps the configurations' rules correct (cert-manager's CA
	// injector sets the caBundle).
	Generate    bool
	TTL         time.Duration
	RenewBefore time.Duration
	Log         logr.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Resync bounds the time between two checks; 0 means 10 minutes.
	Resync time.Duration
	// Ready reports whether this replica serves reviews (the operator's
	// readiness); the dragnet is armed only then. nil: ready.
	Ready func() error
}

var (
	_ manager.Runnable               = (*CertManager)(nil)
	_ manager.LeaderElectionRunnable = (*CertManager)(nil)
)

// NeedLeaderElection is true: one replica writes.
func (m *CertManager) NeedLeaderElection() bool { return true }

func (m *CertManager) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// Start runs until ctx ends, reconciling on every change of the watched
// objects, on a timer, and before the certificate needs renewal.
func (m *CertManager) Start(ctx context.Context) error {
	wake := make(chan struct{}, 1)
	poke := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify(wake) },
		UpdateFunc: func(any, any) { notify(wake) },
		DeleteFunc: func(any) { notify(wake) },
	}
	watched := []client.Object{&corev1.Secret{}}
	if m.Configs.Mutating != "" {
		watched = append(watched, &admissionv1.MutatingWebhookConfiguration{})
	}
	if m.Configs.Validating != "" {
		watched = append(watched, &admissionv1.ValidatingWebhookConfiguration{})
	}
	for _, obj := range watched {
		inf, err := m.Informers.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("certificate manager: informer for %T: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(poke); err != nil {
			return fmt.Errorf("certificate manager: %w", err)
		}
	}
	if !m.Informers.WaitForCacheSync(ctx) {
		return ctx.Err()
	}
	resync := m.Resync
	if resync <= 0 {
		resync = 10 * time.Minute
	}
	backoff := time.Second
	for {
		next, err := m.Reconcile(ctx)
		wait := min(resync, next)
		if err != nil && ctx.Err() == nil {
			m.Log.Error(err, "keeping the webhook certificate and configurations correct failed; retrying", "in", backoff.String())
			wait = backoff
			backoff = min(2*backoff, time.Minute)
		} else {
			backoff = time.Second
		}
		t := time.NewTimer(max(wait, 100*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-wake:
			t.Stop()
		case <-t.C:
		}
	}
}

func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Reconcile makes one pass: ensure the certificate, then the
// configurations. It returns when the certificate next needs a look.
func (m *CertManager) Reconcile(ctx context.Context) (time.Duration, error) {
	next := time.Hour
	var caBundle []byte
	if m.Generate {
		b, err := m.ensureSecret(ctx)
		if err != nil {
			return 0, err
		}
		caBundle = b.CAPEM
		next = b.NotAfter.Add(-m.RenewBefore).Sub(m.now())
	}
	var errs []error
	if m.Configs.Mutating != "" {
		armed, err := m.updateMutating(ctx, caBundle)
		errs = append(errs, err)
		if !armed {
			next = min(next, time.Second) // look again soon: arm once ready
		}
	}
	if m.Configs.Validating != "" {
		armed, err := m.updateValidating(ctx, caBundle)
		errs = append(errs, err)
		if !armed {
			next = min(next, time.Second)
		}
	}
	return next, errors.Join(errs...)
}

// ensureSecret returns the valid bundle in the Secret, creating or renewing
// it when needed.
func (m *CertManager) ensureSecret(ctx context.Context) (*certs.Bundle, error) {
	now := m.now()
	var s corev1.Secret
	err := m.Client.Get(ctx, m.Secret, &s)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading Secret %s: %w", m.Secret, err)
	}
	var old *certs.Bundle
	if exists {
		old = &certs.Bundle{
			CertPEM: s.Data[corev1.TLSCertKey], KeyPEM: s.Data[corev1.TLSPrivateKeyKey],
			CAPEM: s.Data[SecretCAKey], CAKeyPEM: s.Data[SecretCAKeyKey],
		}
		checkErr := old.Check(m.Hosts, now, m.RenewBefore)
		if checkErr == nil {
			return old, nil
		}
		m.Log.Info("renewing the webhook serving certificate", "secret", m.Secret.String(), "reason", checkErr.Error())
	}
	b, err := certs.Generate(certs.Options{Hosts: m.Hosts, Now: now, TTL: m.TTL})
	if err != nil {
		return nil, err
	}
	if old != nil {
		// Keep the previous CAs that are still valid in the bundle, so the
		// API server trusts the old certificate until every replica serves
		// the new one.
		b.CAPEM = append(b.CAPEM, validCAs(old.CAPEM, now)...)
	}
	data := map[string][]byte{
		corev1.TLSCertKey:       b.CertPEM,
		corev1.TLSPrivateKeyKey: b.KeyPEM,
		SecretCAKey:             b.CAPEM,
		SecretCAKeyKey:          b.CAKeyPEM,
	}
	if exists {
		s.Data = data
		s.Type = corev1.SecretTypeTLS
		if err := m.Client.Update(ctx, &s); err != nil {
			return nil, fmt.Errorf("renewing Secret %s: %w", m.Secret, err)
		}
	} else {
		s = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: m.Secret.Namespace, Name: m.Secret.Name,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "modwright"}},
			Type: corev1.SecretTypeTLS,
			Data: data,
		}
		if err := m.Client.Create(ctx, &s); err != nil {
			return nil, fmt.Errorf("creating Secret %s: %w", m.Secret, err)
		}
	}
	m.Log.Info("wrote the webhook serving certificate", "secret", m.Secret.String(), "notAfter", b.NotAfter.Format(time.RFC3339), "hosts", m.Hosts)
	return b, nil
}

// validCAs returns the certificates in bundle that are still valid at now,
// PEM encoded.
func validCAs(bundle []byte, now time.Time) []byte {
	var out []byte
	for {
		var blk *pem.Block
		blk, bundle = pem.Decode(bundle)
		if blk == nil {
			return out
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil || now.After(c.NotAfter) {
			continue
		}
		out = append(out, pem.EncodeToMemory(blk)...)
	}
}

// hook is what the operator keeps of one webhook of a mutating or
// validating configuration.
type hook struct {
	name   string
	ca     *[]byte
	rules  *[]admissionv1.RuleWithOperations
	policy **admissionv1.FailurePolicyType
}

// keep sets every hook's caBundle (when not nil) and the dragnet's rules,
// and arms the dragnet (see WebhookConfigs.DragnetFailurePolicy), marking
// annotations; waiting is true while the dragnet waits to be armed.
func (m *CertManager) keep(annotations map[string]string, caBundle []byte, hooks []hook) (waiting, armedNow bool) {
	toArm := annotations[ArmedAnnotation] == "false" && m.Configs.DragnetFailurePolicy != ""
	ready := !toArm || m.Ready == nil || m.Ready() == nil
	for _, h := range hooks {
		if caBundle != nil {
			*h.ca = caBundle
		}
		if h.name != m.Configs.DragnetWebhook {
			continue
		}
		if m.Configs.DragnetRules != nil {
			*h.rules = m.Configs.DragnetRules
		}
		if toArm && ready && len(*h.ca) > 0 {
			p := m.Configs.DragnetFailurePolicy
			*h.policy = &p
			armedNow = true
		}
	}
	if armedNow {
		annotations[ArmedAnnotation] = "true"
	}
	return toArm && !armedNow, armedNow
}

// updateMutating keeps the mutating configuration correct (keep); armed
// is false while its dragnet waits to be armed.
func (m *CertManager) updateMutating(ctx context.Context, caBundle []byte) (armed bool, err error) {
	return updateConfig(ctx, m, "MutatingWebhookConfiguration", m.Configs.Mutating, &admissionv1.MutatingWebhookConfiguration{}, caBundle,
		(*admissionv1.MutatingWebhookConfiguration).DeepCopy, equalMutating,
		func(c *admissionv1.MutatingWebhookConfiguration) []hook {
			hooks := make([]hook, len(c.Webhooks))
			for i := range c.Webhooks {
				w := &c.Webhooks[i]
				hooks[i] = hook{w.Name, &w.ClientConfig.CABundle, &w.Rules, &w.FailurePolicy}
			}
			return hooks
		})
}

// updateValidating keeps the validating configuration correct (keep: the
// dragnet's validating webhook too); armed is false while its dragnet
// waits to be armed.
func (m *CertManager) updateValidating(ctx context.Context, caBundle []byte) (armed bool, err error) {
	return updateConfig(ctx, m, "ValidatingWebhookConfiguration", m.Configs.Validating, &admissionv1.ValidatingWebhookConfiguration{}, caBundle,
		(*admissionv1.ValidatingWebhookConfiguration).DeepCopy, equalValidating,
		func(c *admissionv1.ValidatingWebhookConfiguration) []hook {
			hooks := make([]hook, len(c.Webhooks))
			for i := range c.Webhooks {
				w := &c.Webhooks[i]
				hooks[i] = hook{w.Name, &w.ClientConfig.CABundle, &w.Rules, &w.FailurePolicy}
			}
			return hooks
		})
}

// updateConfig reads the configuration name (of kind) into c, keeps it correct
// (keep, on the webhooks hooksOf gives) and patches it when that changed
// it; armed is false while its dragnet waits to be armed.
func updateConfig[T client.Object](ctx context.Context, m *CertManager, kind, name string, c T, caBundle []byte,
	copyOf func(T) T, equal func(a, b T) bool, hooksOf func(T) []hook) (armed bool, err error) {
	if err := m.Client.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
		if apierrors.IsNotFound(err) {
			m.Log.V(1).Info(kind+" not found; nothing to update", "name", name)
			return true, nil
		}
		return true, err
	}
	orig := copyOf(c)
	waiting, armedNow := m.keep(c.GetAnnotations(), caBundle, hooksOf(c))
	if equal(orig, c) {
		return !waiting, nil
	}
	if err := m.Client.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, fmt.Errorf("updating %s %s: %w", kind, name, err)
	}
	if armedNow {
		m.Log.Info("armed the dragnet webhook: a replica is ready", "kind", kind, "name", name, "failurePolicy", m.Configs.DragnetFailurePolicy)
	} else {
		m.Log.Info("updated the webhook configuration", "kind", kind, "name", name)
	}
	return !waiting, nil
}

func equalMutating(a, b *admissionv1.MutatingWebhookConfiguration) bool {
	return a.Annotations[ArmedAnnotation] == b.Annotations[ArmedAnnotation] &&
		slices.EqualFunc(a.Webhooks, b.Webhooks, func(x, y admissionv1.MutatingWebhook) bool {
			return equalHook(x.ClientConfig.CABundle, y.ClientConfig.CABundle, x.Rules, y.Rules, x.FailurePolicy, y.FailurePolicy)
		})
}

func equalValidating(a, b *admissionv1.ValidatingWebhookConfiguration) bool {
	return a.Annotations[ArmedAnnotation] == b.Annotations[ArmedAnnotation] &&
		slices.EqualFunc(a.Webhooks, b.Webhooks, func(x, y admissionv1.ValidatingWebhook) bool {
			return equalHook(x.ClientConfig.CABundle, y.ClientConfig.CABundle, x.Rules, y.Rules, x.FailurePolicy, y.FailurePolicy)
		})
}

func equalHook(caX, caY []byte, rulesX, rulesY []admissionv1.RuleWithOperations, px, py *admissionv1.FailurePolicyType) bool {
	policy := func(p *admissionv1.FailurePolicyType) admissionv1.FailurePolicyType {
		if p == nil {
			return admissionv1.Fail // the API server's default
		}
		return *p
	}
	return bytes.Equal(caX, caY) && slices.EqualFunc(rulesX, rulesY, equalRule) && policy(px) == policy(py)
}

func equalRule(x, y admissionv1.RuleWithOperations) bool {
	scope := func(s *admissionv1.ScopeType) admissionv1.ScopeType {
		if s == nil {
			return admissionv1.AllScopes
		}
		return *s
	}
	return slices.Equal(x.Operations, y.Operations) && slices.Equal(x.APIGroups, y.APIGroups) &&
		slices.Equal(x.APIVersions, y.APIVersions) && slices.Equal(x.Resources, y.Resources) &&
		scope(x.Scope) == scope(y.Scope)
}
