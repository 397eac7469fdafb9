package generator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
)

// Existing carries out what the rules that act on existing objects
// (engine.RuleInfo.Existing: Kyverno's generateExisting and
// mutateExistingOnPolicyUpdate) make of the objects already in the cluster,
// when such a rule is added or changed: each object of the kinds it can
// match is evaluated against that rule alone, as if created, and what the
// named inner rules generate or change is handed to the Generator (created,
// applied, patched as for an admitted trigger; its queue bounds the work).
//
// It runs on the elected leader (one scan of the cluster), looks at the
// serving snapshot every Interval and scans a rule when it is new or
// changed (a rule compiled again is another value). After a restart it
// scans every such rule once more: what it generates exists already (a
// create is done once) or is synchronized, so a scan is idempotent.
type Existing struct {
	Generator *Generator
	Snapshots interface{ Current() *engine.Snapshot }
	Client    dynamic.Interface
	Discovery discovery.DiscoveryInterface
	Log       logr.Logger
	// Interval between looks at the snapshot (0: 5 s); PageSize bounds
	// one list request (0: 500).
	Interval time.Duration
	PageSize int64

	// scanned are the rules scanned, by kind group, kind and key: each
	// rule's info, whose address is the compiled rule's.
	scanned map[string]*engine.RuleInfo
}

// NeedLeaderElection: one replica scans.
func (*Existing) NeedLeaderElection() bool { return true }

// Start scans until ctx is done.
func (x *Existing) Start(ctx context.Context) error {
	interval := x.Interval
	if interval <= 0 {
		interval = 5 * time.Second
	}
	x.scanned = map[string]*engine.RuleInfo{}
	wait.UntilWithContext(ctx, x.scan, interval)
	return nil
}

// scan scans the rules of the serving snapshot that act on existing
// objects and are new or changed since their last scan.
func (x *Existing) scan(ctx context.Context) {
	snap := x.Snapshots.Current()
	if snap == nil {
		return
	}
	seen := map[string]bool{}
	for _, r := range snap.Rules() {
		info := r.Info()
		if info.Err != nil || len(info.Existing) == 0 {
			continue
		}
		key := info.Group + "/" + info.Kind + "/" + info.Key
		seen[key] = true
		if x.scanned[key] == info {
			continue
		}
		n, err := x.scanRule(ctx, r)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			x.Log.Error(err, "existing objects not all evaluated; tried again at the next look", "rule", info.Kind+" "+info.Key)
			continue
		}
		x.Log.Info("existing objects evaluated", "rule", info.Kind+" "+info.Key, "objects", n)
		x.scanned[key] = info
	}
	for key := range x.scanned {
		if !seen[key] {
			delete(x.scanned, key)
		}
	}
}

// scanRule evaluates the objects of the kinds r can match, page by page.
func (x *Existing) scanRule(ctx context.Context, r engine.Rule) (int, error) {
	info := r.Info()
	gvrs, err := x.resources(info.Index.Kinds, info.ExistingResources)
	if err != nil {
		return 0, err
	}
	snap := engine.NewSnapshot([]engine.Rule{r})
	page := x.PageSize
	if page <= 0 {
		page = 500
	}
	n := 0
	var errs []error
	for _, gvr := range gvrs {
		err := x.Generator.listPages(ctx, x.Client.Resource(gvr), metav1.ListOptions{Limit: page}, func(o *unstructured.Unstructured) bool {
			n++
			if err := x.evaluate(ctx, snap, info, gvr, o); err != nil {
				if ctx.Err() != nil {
					return false
				}
				errs = append(errs, err)
			}
			return true
		})
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("listing %s: %w", gvr, err))
		}
	}
	return n, errors.Join(errs...)
}

// evaluate evaluates one existing object as if created and queues what
// the rule's named inner rules generate or change.
func (x *Existing) evaluate(ctx context.Context, snap *engine.Snapshot, info *engine.RuleInfo, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) error {
	gv, _ := schema.ParseGroupVersion(obj.GetAPIVersion())
	req := engine.Request{Operation: rules.Create, Name: obj.GetName(), Namespace: obj.GetNamespace(), Object: obj.Object,
		Kind:     engine.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: obj.GetKind()},
		Resource: engine.GroupVersionResource{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource}, Phases: engine.Validate,
		Existing: true}
	dec, err := x.Generator.eng.Evaluate(ctx, snap, req)
	if err != nil {
		return fmt.Errorf("%s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	trig := trigger{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: string(obj.GetUID())}
	for _, gen := range dec.Generated {
		if !slices.Contains(info.Existing, gen.Name) {
			continue
		}
		t := &task{action: actionCreate, obj: gen.Object, sync: gen.Synchronize, rule: ruleName(gen), trig: trig}
		if gen.Patch != nil {
			t.action, t.ops = actionPatch, gen.Patch
		}
		x.Generator.add(t, false)
	}
	return nil
}

// resources are the resources named (when not nil: a version the API
// does not serve fails its listing), else the listable resources
// (preferred versions) of kinds (every kind's when nil).
func (x *Existing) resources(kinds []string, named []engine.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	if named != nil {
		out := make([]schema.GroupVersionResource, len(named))
		for i, r := range named {
			out[i] = schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
		}
		return out, nil
	}
	lists, err := discovery.ServerPreferredResources(x.Discovery)
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discovering the API's resources: %w", err)
	}
	var out []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || (kinds != nil && !slices.Contains(kinds, r.Kind)) {
				continue
			}
			out = append(out, gv.WithResource(r.Name))
		}
	}
	return out, nil
}
