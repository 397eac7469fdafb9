package generator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/modwright/modwright/internal/engine"
)

// Downstream deletes the synchronized objects a rule generated when the
// rule is deleted (engine.RuleInfo.Downstream: Kyverno's synchronize
// without orphanDownstreamOnPolicyDelete). It runs on the elected leader
// and looks at the serving snapshot every Interval: a rule it saw that is
// no longer there is deleted only once the API server confirms its object
// is gone (a snapshot that briefly lacks a rule deletes nothing); then the
// objects of the watched resources the Generator marked as that rule's
// are deleted, each with its uid as precondition. A rule deleted while no
// replica was the leader is found through its objects: the Generator marks
// each synchronized object of such a rule with the rule's identity
// (AnnotationDownstream), and the first look of a new leader goes through
// the marked objects (sweep) and asks the API server about their rules.
type Downstream struct {
	Generator *Generator
	Snapshots interface{ Current() *engine.Snapshot }
	Log       logr.Logger
	// Interval between looks at the snapshot (0: 5 s).
	Interval time.Duration

	known map[string]knownRule // by kind group, kind and key
	// swept: the objects marked with AnnotationDownstream were looked
	// through once (sweep).
	swept bool
}

// knownRule is a rule seen with downstream objects (also the JSON of
// AnnotationDownstream, with one inner rule).
type knownRule struct {
	Group     string   `json:"group,omitempty"`
	Kind      string   `json:"kind"`
	Key       string   `json:"key"`
	Namespace string   `json:"namespace,omitempty"`
	Name      string   `json:"name"`
	Inner     []string `json:"inner,omitempty"`
	// marked: known only from objects' marks (sweep), which anyone who
	// may edit an object can write: only the objects that carry its mark
	// themselves are deleted with it, never another namespace's by a
	// forged mark.
	marked bool
}

// maxSwept bounds the rules a sweep notes from marks.
const maxSwept = 1000

// downstreamOf is the serving rule whose inner rule named by rule (a
// ruleName) deletes its synchronized objects with the rule.
func (g *Generator) downstreamOf(rule string) (knownRule, bool) {
	if g.o.Snapshots == nil {
		return knownRule{}, false
	}
	snap := g.o.Snapshots.Current()
	if snap == nil {
		return knownRule{}, false
	}
	for _, r := range snap.Rules() {
		info := r.Info()
		for _, inner := range info.Downstream {
			if ruleName(engine.Generated{Kind: info.Kind, Rule: info.Key, Name: inner}) == rule {
				return knownRule{Group: info.Group, Kind: info.Kind, Key: info.Key, Namespace: info.Namespace, Name: info.Name, Inner: []string{inner}}, true
			}
		}
	}
	return knownRule{}, false
}

// NeedLeaderElection: one replica deletes.
func (*Downstream) NeedLeaderElection() bool { return true }

// Start looks until ctx is done.
func (d *Downstream) Start(ctx context.Context) error {
	interval := d.Interval
	if interval <= 0 {
		interval = 5 * time.Second
	}
	d.known = map[string]knownRule{}
	wait.UntilWithContext(ctx, d.look, interval)
	return nil
}

// look notes the rules with downstream objects and deletes those of the
// rules gone.
func (d *Downstream) look(ctx context.Context) {
	snap := d.Snapshots.Current()
	if snap == nil {
		return
	}
	present := map[string]bool{}
	for _, r := range snap.Rules() {
		info := r.Info()
		key := info.Group + "/" + info.Kind + "/" + info.Key
		present[key] = true
		if info.Err != nil {
			continue // broken for now: what it had is kept
		}
		inner := slices.Clone(info.Downstream)
		if prev, had := d.known[key]; had && !prev.marked {
			inner = append(inner, d.removedInner(ctx, prev, info.Generates)...)
		}
		if len(inner) == 0 {
			delete(d.known, key)
			continue
		}
		d.known[key] = knownRule{Group: info.Group, Kind: info.Kind, Key: info.Key, Namespace: info.Namespace, Name: info.Name, Inner: inner}
	}
	if !d.swept {
		d.swept = d.sweep(ctx, present)
	}
	for key, k := range d.known {
		if present[key] {
			continue
		}
		gone, err := d.deleted(ctx, k)
		if err != nil {
			d.Log.V(1).Info("a rule left the snapshot; whether it was deleted is not known yet", "rule", k.Kind+" "+k.Key, "error", err.Error())
			continue
		}
		if !gone {
			continue // back in a later snapshot
		}
		if err := d.deleteDownstream(ctx, k); err != nil {
			d.Log.Error(err, "deleting the objects of a deleted rule; tried again at the next look", "rule", k.Kind+" "+k.Key)
			continue
		}
		delete(d.known, key)
	}
}

// removedInner deletes the synchronized objects of the inner rules of k
// (a rule still serving) that it no longer has (not in generates: removed
// from the rule, or renamed), as Kyverno deletes a removed rule's; it
// returns those whose objects could not all be deleted, to try again at
// the next look. An inner rule still there, its objects kept with it (or
// orphaned, when it stopped synchronizing), is never one.
func (d *Downstream) removedInner(ctx context.Context, k knownRule, generates []string) []string {
	var removed []string
	for _, inner := range k.Inner {
		if !slices.Contains(generates, inner) {
			removed = append(removed, inner)
		}
	}
	if len(removed) == 0 {
		return nil
	}
	k.Inner = removed
	if err := d.deleteDownstream(ctx, k); err != nil {
		d.Log.Error(err, "deleting the objects of rules removed from a rule; tried again at the next look", "rule", k.Kind+" "+k.Key, "removed", removed)
		return removed
	}
	return nil
}

// sweep notes the rules that marked synchronized objects of the watched
// resources (AnnotationDownstream) but are not among the serving rules
// (present): deleted while no replica led, perhaps, which look then asks
// the API server. An object of a serving rule that deletes its objects
// with it but carries no mark of it (written before marks existed, or
// its mark edited) is marked, so that a later leader finds it too. It
// reports whether every resource was listed.
func (d *Downstream) sweep(ctx context.Context, present map[string]bool) bool {
	g := d.Generator
	noted := 0
	err := g.eachGenerated(ctx, func(ri dynamic.NamespaceableResourceInterface, o *unstructured.Unstructured) {
		k, ok := markOf(o)
		if !ok {
			if serving, isDownstream := g.downstreamOf(o.GetAnnotations()[AnnotationRule]); isDownstream {
				d.mark(ctx, ri, o, serving)
			}
			return
		}
		key := k.Group + "/" + k.Kind + "/" + k.Key
		had, seen := d.known[key]
		switch {
		case present[key] || seen && !had.marked:
			return // serving, or known from the snapshot already
		case !seen && noted == maxSwept:
			d.Log.Info("more rules marked objects than a sweep notes; the others are not looked for", "most", maxSwept)
			return
		case !seen:
			if _, err := g.o.Mapper.RESTMapping(schema.GroupKind{Group: k.Group, Kind: k.Kind}); err != nil {
				return // no such kind: no rule of it to have been deleted
			}
			noted++
		}
		k.Inner = slices.Compact(slices.Sorted(slices.Values(append(had.Inner, k.Inner...))))
		k.marked = true
		d.known[key] = k
	})
	if err != nil {
		d.Log.V(1).Info("listing generated objects for the rules deleted while no replica led; tried again", "error", err.Error())
	}
	return err == nil
}

// mark writes k, the rule that generated o, as o's AnnotationDownstream
// (a merge patch of that annotation alone, with o's uid as precondition);
// a failure is logged and left to the next leader's sweep.
func (d *Downstream) mark(ctx context.Context, ri dynamic.NamespaceableResourceInterface, o *unstructured.Unstructured, k knownRule) {
	kj, _ := json.Marshal(k)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": o.GetUID(), "annotations": map[string]string{AnnotationDownstream: string(kj)}}})
	pctx, cancel := context.WithTimeout(ctx, d.Generator.o.Timeout)
	defer cancel()
	if _, err := ri.Namespace(o.GetNamespace()).Patch(pctx, o.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		d.Log.V(1).Info("marking a synchronized object with its rule", "object", o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName(), "error", err.Error())
		return
	}
	d.Generator.o.Metrics.count("marked")
}

// markOf is an object's AnnotationDownstream, when it is one of a single
// inner rule that the object's own AnnotationRule names.
func markOf(o *unstructured.Unstructured) (knownRule, bool) {
	var k knownRule
	ann := o.GetAnnotations()
	text := ann[AnnotationDownstream]
	if text == "" || len(text) > 4096 || json.Unmarshal([]byte(text), &k) != nil || k.Kind == "" || k.Name == "" || len(k.Inner) != 1 ||
		ann[AnnotationRule] != ruleName(engine.Generated{Kind: k.Kind, Rule: k.Key, Name: k.Inner[0]}) {
		return knownRule{}, false
	}
	return k, true
}

// eachGenerated calls fn with each object of the watched resources the
// Generator marked (and its resource's client), listed page by page; the
// errors are those of the lists (a resource that fails is left).
func (g *Generator) eachGenerated(ctx context.Context, fn func(ri dynamic.NamespaceableResourceInterface, o *unstructured.Unstructured)) error {
	var errs []error
	for _, gvr := range g.o.Watch {
		ri := g.o.Client.Resource(gvr)
		err := g.listPages(ctx, ri, metav1.ListOptions{LabelSelector: LabelGenerated + "=true", Limit: 500}, func(o *unstructured.Unstructured) bool {
			fn(ri, o)
			return true
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("listing %s: %w", gvr, err))
		}
	}
	return errors.Join(errs...)
}

// listPages lists ri page by page (opts.Limit objects a page), each
// request within the Generator's timeout, calling fn with each object
// until it returns false.
func (g *Generator) listPages(ctx context.Context, ri dynamic.ResourceInterface, opts metav1.ListOptions, fn func(*unstructured.Unstructured) bool) error {
	for {
		lctx, cancel := context.WithTimeout(ctx, g.o.Timeout)
		list, err := ri.List(lctx, opts)
		cancel()
		if err != nil {
			return err
		}
		for i := range list.Items {
			if !fn(&list.Items[i]) {
				return nil
			}
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

// deleted asks the API server whether the rule's object is gone.
func (d *Downstream) deleted(ctx context.Context, k knownRule) (bool, error) {
	g := d.Generator
	m, err := g.o.Mapper.RESTMapping(schema.GroupKind{Group: k.Group, Kind: k.Kind})
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, g.o.Timeout)
	defer cancel()
	_, err = g.o.Client.Resource(m.Resource).Namespace(k.Namespace).Get(ctx, k.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	}
	return false, nil
}

// deleteDownstream deletes the objects of the watched resources marked as
// generated by the rule's inner rules.
func (d *Downstream) deleteDownstream(ctx context.Context, k knownRule) error {
	g := d.Generator
	want := map[string]bool{}
	for _, inner := range k.Inner {
		want[ruleName(engine.Generated{Kind: k.Kind, Rule: k.Key, Name: inner})] = true
	}
	var errs []error
	n := 0
	errs = append(errs, g.eachGenerated(ctx, func(ri dynamic.NamespaceableResourceInterface, o *unstructured.Unstructured) {
		if !want[o.GetAnnotations()[AnnotationRule]] {
			return
		}
		if m, ok := markOf(o); k.marked && (!ok || m.Group != k.Group || m.Kind != k.Kind || m.Key != k.Key) {
			return // not its own mark: left
		}
		uid := o.GetUID()
		dctx, cancel := context.WithTimeout(ctx, g.o.Timeout)
		err := ri.Namespace(o.GetNamespace()).Delete(dctx, o.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		cancel()
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, err)
			return
		}
		n++
		g.o.Metrics.count("deleted")
	}))
	d.Log.Info("deleted the synchronized objects of deleted rules", "rule", k.Kind+" "+k.Key, "inner", k.Inner, "objects", n)
	return errors.Join(errs...)
}
