package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/source/cluster"
)

// Labels on the CRDs the DefinitionInstaller installs: the group of the
// definitions (templates.gatekeeper.sh) and the definition's name.
const (
	LabelDefinitionGroup = "modwright.io/definition-group"
	LabelDefinition      = "modwright.io/definition"
)

// Definitions is what the installer reads: the rule source's compiled
// definitions.
type Definitions interface {
	Definitions() []cluster.Definitions
}

// DefinitionInstaller runs on the leader: it installs the CRD of each rule
// kind a definition in the cluster defines (the constraint kind of each
// Gatekeeper ConstraintTemplate, as Gatekeeper creates it), owned by the
// definition and labeled with it, writes each definition's status (the
// definer's own shape: kinds.Defining.DefinitionStatus) when it changes,
// and deletes the CRDs it installed for definitions that are gone (their
// rules go with them, as in Gatekeeper). A definition that stops
// compiling keeps its CRD and rules (reported broken). It is woken by
// Changed (the rule source's OnDefinitions) and retries failures with a
// backoff.
type DefinitionInstaller struct {
	Client client.Client
	// Reader lists CRDs (the manager's API reader); nil: Client.
	Reader client.Reader
	Source Definitions
	// ID names this replica in definition status (its pod name).
	ID  string
	Log logr.Logger
	// RetryDelay is the first wait after a failure (doubled up to a
	// minute); zero means 1 s.
	RetryDelay time.Duration

	once sync.Once
	wake chan struct{}
}

var (
	_ manager.Runnable               = (*DefinitionInstaller)(nil)
	_ manager.LeaderElectionRunnable = (*DefinitionInstaller)(nil)
)

// NeedLeaderElection is true: one replica installs.
func (d *DefinitionInstaller) NeedLeaderElection() bool { return true }

func (d *DefinitionInstaller) init() { d.once.Do(func() { d.wake = make(chan struct{}, 1) }) }

// Changed says the definitions changed; it never blocks.
func (d *DefinitionInstaller) Changed() {
	d.init()
	wakeUp(d.wake)
}

// wakeUp wakes a loop waiting on ch (of capacity 1) without blocking.
func wakeUp(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Start installs until ctx ends.
func (d *DefinitionInstaller) Start(ctx context.Context) error {
	d.init()
	return runLoop(ctx, d.wake, d.RetryDelay, d.Log, "installing the definitions' CRDs failed; retrying", d.Sync)
}

// runLoop runs sync now, on every wake, and after a failure once a
// backoff has passed (first, 1 s when zero, doubled up to a minute), until
// ctx ends.
func runLoop(ctx context.Context, wake <-chan struct{}, first time.Duration, log logr.Logger, failed string, sync func(context.Context) error) error {
	if first <= 0 {
		first = time.Second
	}
	delay := first
	var retry <-chan time.Time
	for {
		if err := sync(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, failed, "retryIn", delay.String())
			retry = time.After(delay)
			delay = min(2*delay, time.Minute)
		} else {
			retry, delay = nil, first
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-retry:
		}
	}
}

// Sync installs the CRDs, writes the definitions' status and deletes the
// CRDs of definitions that are gone, once.
func (d *DefinitionInstaller) Sync(ctx context.Context) error {
	var errs []error
	for _, defs := range d.Source.Definitions() {
		dk, ok := defs.Kind.(kinds.Defining)
		if !ok {
			continue
		}
		installed := map[string]error{} // by definition name
		for _, def := range dk.Defined() {
			if def.CRD == nil {
				continue // it does not compile: its CRD, if any, stays
			}
			err := d.install(ctx, defs, def)
			installed[def.By] = err
			if err != nil {
				errs = append(errs, err)
			}
		}
		names := map[string]bool{}
		for i, m := range defs.Manifests {
			names[m.Name()] = true
			ierr, defined := installed[m.Name()]
			st := dk.DefinitionStatus(m, d.ID, defs.Errs[i], ierr, defined && ierr == nil)
			if err := d.writeStatus(ctx, defs, m, st); err != nil {
				errs = append(errs, err)
			}
		}
		if err := d.collect(ctx, defs.GVK.Group, names); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// install applies a defined kind's CRD (server-side apply, owned by the
// definition).
func (d *DefinitionInstaller) install(ctx context.Context, defs cluster.Definitions, def kinds.Definition) error {
	obj := maps.Clone(def.CRD)
	md, _ := obj["metadata"].(map[string]any)
	md = maps.Clone(md)
	if md == nil {
		md = map[string]any{}
	}
	labels, _ := md["labels"].(map[string]any)
	labels = maps.Clone(labels)
	if labels == nil {
		labels = map[string]any{}
	}
	labels[LabelDefinitionGroup] = defs.GVK.Group
	labels[LabelDefinition] = def.By
	md["labels"] = labels
	if def.UID != "" {
		md["ownerReferences"] = []any{map[string]any{
			"apiVersion": defs.GVK.GroupVersion().String(), "kind": defs.GVK.Kind, "name": def.By, "uid": def.UID,
		}}
	}
	obj["metadata"] = md
	u := &unstructured.Unstructured{Object: obj}
	if err := d.Client.Patch(ctx, u, client.Apply, client.FieldOwner("modwright"), client.ForceOwnership); err != nil {
		return fmt.Errorf("installing the CustomResourceDefinition of kind %s (%s %s): %w", def.Kind, defs.GVK.Kind, def.By, err)
	}
	return nil
}

// writeStatus patches a definition's status when it differs.
func (d *DefinitionInstaller) writeStatus(ctx context.Context, defs cluster.Definitions, m *kinds.Manifest, st map[string]any) error {
	if err := patchStatus(ctx, d.Client, defs.GVK, m, st); err != nil {
		return fmt.Errorf("writing the status of %s %s: %w", defs.GVK.Kind, m.Key(), err)
	}
	return nil
}

// patchStatus merges st into the status of m (stored as gvk) when that
// changes it; an object gone is left alone.
func patchStatus(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, m *kinds.Manifest, st map[string]any) error {
	old, _ := m.Object["status"].(map[string]any)
	merged := maps.Clone(old)
	if merged == nil {
		merged = map[string]any{}
	}
	maps.Copy(merged, st)
	if equality.Semantic.DeepEqual(jsonRoundTrip(merged), jsonRoundTrip(old)) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetName(m.Name())
	u.SetNamespace(m.Namespace())
	if err := c.Status().Patch(ctx, u, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// jsonRoundTrip normalizes a tree's numbers for comparison.
func jsonRoundTrip(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

// collect deletes the CRDs installed for definitions of group that are
// not among names.
func (d *DefinitionInstaller) collect(ctx context.Context, group string, names map[string]bool) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	r := d.Reader
	if r == nil {
		r = d.Client
	}
	if err := r.List(ctx, list, client.MatchingLabels{LabelDefinitionGroup: group}); err != nil {
		return fmt.Errorf("listing the CustomResourceDefinitions of %s: %w", group, err)
	}
	var errs []error
	for i := range list.Items {
		crd := &list.Items[i]
		if names[crd.Labels[LabelDefinition]] {
			continue
		}
		d.Log.Info("deleting the CustomResourceDefinition of a definition that is gone", "crd", crd.Name, "definition", crd.Labels[LabelDefinition])
		if err := d.Client.Delete(ctx, crd); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting CustomResourceDefinition %s: %w", crd.Name, err))
		}
	}
	return errors.Join(errs...)
}
