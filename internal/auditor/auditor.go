package auditor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/modwright/modwright/internal/audit"
	"github.com/modwright/modwright/internal/engine"
)

// Snapshots gives the serving snapshot (nil until the first is published).
type Snapshots interface {
	Current() *engine.Snapshot
}

// Store keeps the reports of a scan.
type Store interface {
	// Write makes the report's objects (stamped with now) the current
	// reports: each written where it changed, the others (of namespaces
	// without results now) removed.
	Write(ctx context.Context, rp *audit.Report, now time.Time) error
}

// RuleCount is a rule's count of fail results in a scan.
type RuleCount struct {
	Group, Kind, Key string
	Fails            int64
}

// Violations records the counts of a scan in the rules' status.
type Violations interface {
	Record(ctx context.Context, counts []RuleCount, at time.Time) error
}

// Options configure an Auditor.
type Options struct {
	Snapshots Snapshots
	// Readers are the engine's readers the rules read with, as at
	// admission.
	Readers engine.Options
	// Client lists the objects (give it a rate-limited configuration: its
	// QPS bounds the scan's load on the API server); Discovery finds
	// their resources.
	Client    dynamic.Interface
	Discovery discovery.DiscoveryInterface
	Store     Store
	// Violations records each validating rule's count of fail results
	// after a scan; nil: not recorded.
	Violations Violations
	// Interval between full scans; default one hour.
	Interval time.Duration
	// Poll is how often a new snapshot is looked for; default 5 s.
	Poll time.Duration
	// PageSize is the objects listed per request; default 500.
	PageSize int64
	// MaxResults caps each report (audit.NewReport).
	MaxResults int
	Log        logr.Logger
	Metrics    *Metrics // nil: none
	Now        func() time.Time
}

// Auditor runs background scans. Start it once (a manager.Runnable).
type Auditor struct {
	o Options
}

// New returns an Auditor with o's defaults filled.
func New(o Options) *Auditor {
	if o.Interval <= 0 {
		o.Interval = time.Hour
	}
	if o.Poll <= 0 {
		o.Poll = 5 * time.Second
	}
	if o.PageSize <= 0 {
		o.PageSize = 500
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Auditor{o: o}
}

// NeedLeaderElection: only the leader scans and writes reports.
func (*Auditor) NeedLeaderElection() bool { return true }

// Start scans until ctx ends: at the first snapshot, at each new one, and
// every interval.
func (a *Auditor) Start(ctx context.Context) error {
	var last *engine.Snapshot
	var lastScan time.Time
	for {
		snap := a.o.Snapshots.Current()
		if snap != nil && (snap != last || a.o.Now().Sub(lastScan) >= a.o.Interval) {
			last, lastScan = snap, a.o.Now()
			if err := a.Scan(ctx, snap); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				a.o.Log.Error(err, "background scan")
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(a.o.Poll):
		}
	}
}

// Scan checks every object of the kinds snap's rules can match and writes
// the reports. A kind that cannot be listed is logged and left out (its
// objects' results are then missing from the reports); the scan goes on.
func (a *Auditor) Scan(ctx context.Context, snap *engine.Snapshot) error {
	start := a.o.Now()
	report := audit.NewReport(a.o.MaxResults)
	fails := map[RuleCount]int64{} // by group, kind and key
	w, err := a.Walk(ctx, snap, func(rs []audit.Result) {
		for _, r := range rs {
			report.Add(r)
			if r.Result == audit.Fail {
				fails[RuleCount{Group: r.Group, Kind: r.Kind, Key: r.Policy}]++
			}
		}
	})
	if err != nil {
		a.o.Metrics.scanned(false, w.Objects, nil)
		return err
	}
	walked := a.o.Now()
	if err := a.o.Store.Write(ctx, report, a.o.Now().UTC()); err != nil {
		a.o.Metrics.scanned(false, w.Objects, nil)
		return fmt.Errorf("writing the reports: %w", err)
	}
	if a.o.Violations != nil {
		if err := a.o.Violations.Record(ctx, ruleCounts(snap, fails), a.o.Now()); err != nil {
			a.o.Log.Error(err, "recording the rules' violations in their status")
		}
	}
	sum := report.Summary()
	a.o.Metrics.scanned(len(w.Unlisted) == 0, w.Objects, sum)
	a.o.Metrics.took(a.o.Now().Sub(start))
	a.o.Log.Info("background scan done", "resources", w.Resources, "objects", w.Objects, "requests", w.Requests, "fail", sum[audit.Fail], "error", sum[audit.Error],
		"pass", sum[audit.Pass], "seconds", a.o.Now().Sub(start).Seconds(), "writeSeconds", a.o.Now().Sub(walked).Seconds(),
		"reports", len(report.Namespaces()), "unlisted", strings.Join(w.Unlisted, ","))
	return nil
}

// ruleCounts are the fail counts of every validating rule of snap (0
// for a rule that failed on no object), in the snapshot's order.
func ruleCounts(snap *engine.Snapshot, fails map[RuleCount]int64) []RuleCount {
	var out []RuleCount
	for _, r := range snap.Rules() {
		info := r.Info()
		if !info.Phase.Has(engine.Validate) {
			continue
		}
		c := RuleCount{Group: info.Group, Kind: info.Kind, Key: info.Key}
		c.Fails = fails[c]
		out = append(out, c)
	}
	return out
}

// Walked is what a Walk went through.
type Walked struct {
	Resources, Objects int
	// Requests are the list requests made.
	Requests int
	// Unlisted are the resources that could not be listed (each logged).
	Unlisted []string
}

// Walk lists every object of the kinds snap's rules can match, page by
// page, and gives each object's results to fn. A resource that cannot be
// listed is logged, named in Unlisted and left out; the walk goes on. The
// error is the walk's end (its context's, or discovery's).
func (a *Auditor) Walk(ctx context.Context, snap *engine.Snapshot, fn func([]audit.Result)) (Walked, error) {
	var w Walked
	resources, err := a.resources(snap)
	if err != nil {
		return w, err
	}
	w.Resources = len(resources)
	scanner := audit.NewScanner(snap, a.o.Readers)
	for _, gvr := range resources {
		n, reqs, err := a.scanResource(ctx, scanner, fn, gvr)
		w.Objects += n
		w.Requests += reqs
		if err != nil {
			if ctx.Err() != nil {
				return w, ctx.Err()
			}
			w.Unlisted = append(w.Unlisted, gvr.String())
			a.o.Log.Error(err, "listing failed; its objects are left out", "resource", gvr.String())
		}
	}
	return w, nil
}

// scanResource scans the objects of one resource, page by page: how many,
// in how many list requests.
func (a *Auditor) scanResource(ctx context.Context, scanner *audit.Scanner, fn func([]audit.Result), gvr schema.GroupVersionResource) (n, requests int, err error) {
	opts := metav1.ListOptions{Limit: a.o.PageSize}
	for {
		requests++
		list, err := a.o.Client.Resource(gvr).List(ctx, opts)
		if err != nil {
			return n, requests, err
		}
		for i := range list.Items {
			obj := &list.Items[i]
			results, err := scanner.Scan(ctx, obj.Object, obj.GetNamespace())
			if err != nil {
				return n, requests, err
			}
			fn(results)
			n++
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return n, requests, nil
		}
	}
}

// skipped are resources never scanned: events (no rule validates them,
// and there are many) and the reports themselves.
var skipped = []schema.GroupResource{{Group: "", Resource: "events"}, {Group: "events.k8s.io", Resource: "events"},
	{Group: "wgpolicyk8s.io", Resource: "policyreports"}, {Group: "wgpolicyk8s.io", Resource: "clusterpolicyreports"}}

// resources are the listable resources (preferred versions) of the kinds
// the snapshot's validating rules can match: every kind when one of them
// is not pinned to kinds.
func (a *Auditor) resources(snap *engine.Snapshot) ([]schema.GroupVersionResource, error) {
	kinds := map[string]bool{}
	all := false
	for _, r := range snap.Rules() {
		info := r.Info()
		if info.Err != nil || !info.Phase.Has(engine.Validate) {
			continue
		}
		if info.Index.Kinds == nil {
			all = true
		}
		for _, k := range info.Index.Kinds {
			kinds[k] = true
		}
	}
	if !all && len(kinds) == 0 {
		return nil, nil
	}
	lists, err := discovery.ServerPreferredResources(a.o.Discovery)
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discovering the API's resources: %w", err)
	}
	var gdf *discovery.ErrGroupDiscoveryFailed
	if err != nil && errors.As(err, &gdf) {
		a.o.Log.Info("background scan: some API groups could not be discovered; their objects are left out", "error", err.Error())
	}
	var out []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || (!all && !kinds[r.Kind]) ||
				slices.Contains(skipped, schema.GroupResource{Group: gv.Group, Resource: r.Name}) {
				continue
			}
			out = append(out, gv.WithResource(r.Name))
		}
	}
	slices.SortFunc(out, func(x, y schema.GroupVersionResource) int { return strings.Compare(x.String(), y.String()) })
	return out, nil
}
