package auditor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/modwright/modwright/internal/audit"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/pages"
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

// RuleCount is a rule's count of fail results in a scan, and the first
// of them.
type RuleCount struct {
	Group, Kind, Key string
	Fails            int64
	// Rule is the rule counted.
	Rule engine.Rule
	// Violations are its first fail results (at most
	// Options.MaxViolations), by namespace in order, as the scan found
	// them.
	Violations []Violation
}

// Violation is a fail result as a rule's count lists it: the object and
// the message (the rest is the rule's, alike in every one; a scan keeps up
// to MaxViolations of them per rule and namespace, so they are kept small).
type Violation struct {
	Resource audit.Resource
	Message  string
}

// ruleKey names a rule among the counts.
type ruleKey struct{ Group, Kind, Key string }

// ruleFails is a rule's fail results in one namespace: their count and
// the first of them.
type ruleFails struct {
	n     int64
	first []Violation
}

// DefaultMaxViolations is how many of a rule's fail results its count
// carries (Gatekeeper's --constraint-violations-limit).
const DefaultMaxViolations = 20

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
	Client dynamic.Interface
	// Pages lists the objects page by page; nil: pages.Dynamic over Client.
	// In the cluster pages.Raw, which decodes faster (give it the same
	// rate-limited configuration).
	Pages     pages.Lister
	Discovery discovery.DiscoveryInterface
	Store     Store
	// Policies, when set, audits each scanned object besides the
	// snapshot's rules (Kubernetes' admission policies), and the
	// resources they can match are scanned too. ClusterPolicies, when
	// set, gives them at the start of each full scan instead
	// (ClusterAdmissionPolicies: the cluster's own); an error leaves them
	// out of that scan, logged.
	Policies        *audit.AdmissionPolicies
	ClusterPolicies func(ctx context.Context) (*audit.AdmissionPolicies, error)
	// PoliciesVersion, when set, names the state of what ClusterPolicies
	// reads (ClusterAdmissionPoliciesVersion); it is asked every Poll, and
	// a change starts a full scan, as a rule change does.
	PoliciesVersion func(ctx context.Context) (string, error)
	// Violations records each validating rule's count of fail results
	// after a scan; nil: not recorded.
	Violations Violations
	// Interval between full scans; default one hour.
	Interval time.Duration
	// Poll is how often a new snapshot is looked for; default 5 s.
	Poll time.Duration
	// PageSize is the objects listed per request; default DefaultPageSize.
	PageSize int64
	// MaxResults caps each report (audit.NewReport).
	MaxResults int
	// MaxViolations is how many fail results each RuleCount carries;
	// zero: DefaultMaxViolations, negative: none.
	MaxViolations int
	// Watch, when set, watches the scanned resources' metadata after a
	// scan: a namespace whose objects change is scanned again (the
	// changes of Poll seconds together, a namespace at most every
	// Settle), its report rewritten; nil: changes wait for the next full
	// scan.
	Watch WatchFunc
	// Settle is the least time between two rescans of a namespace;
	// default 10 s.
	Settle time.Duration
	// DuringScan, when set, is called as a full scan or a rescan starts,
	// and the function it returns as that scan ends: the operator widens
	// the collector's headroom for a scan's large live heap (serve
	// --gc-bulk-headroom).
	DuringScan func() (end func())
	Log        logr.Logger
	Metrics    *Metrics // nil: none
	Now        func() time.Time
}

// WatchFunc watches a resource's metadata in every namespace from a
// resourceVersion (metadata.Interface's Watch in the cluster).
type WatchFunc func(ctx context.Context, gvr schema.GroupVersionResource, resourceVersion string) (watch.Interface, error)

// Auditor runs background scans. Start it once (a manager.Runnable).
type Auditor struct {
	o Options
	// last is the last complete scan, which namespace rescans update
	// (Start's goroutine only, or a caller of Scan and Rescan).
	last *scanState
	// changed are the namespaces whose objects changed since they were
	// last scanned ("" for cluster-scoped objects); full asks for a full
	// scan (a watch lost events). Written by the watches.
	mu      sync.Mutex
	changed map[string]bool
	full    bool
}

// scanState is what a scan leaves for the rescans of namespaces.
type scanState struct {
	snap      *engine.Snapshot
	policies  *audit.AdmissionPolicies // Kubernetes' admission policies audited too
	policyVer string                   // PoliciesVersion when the scan started
	resources []resource
	report    *audit.Report
	fails     map[string]map[ruleKey]*ruleFails // by namespace
	limit     int                               // of the fail results kept per rule and namespace
	// reportTime is how long writing the reports took (the rest of the
	// write is the rules' counts).
	reportTime time.Duration
}

// resource is a resource the scan lists: namespaced or not, the
// resourceVersion its list was read at (watches start there).
type resource struct {
	gvr        schema.GroupVersionResource
	namespaced bool
	rv         string
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
		o.PageSize = DefaultPageSize
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Settle <= 0 {
		o.Settle = 10 * time.Second
	}
	if o.MaxViolations == 0 {
		o.MaxViolations = DefaultMaxViolations
	}
	o.MaxViolations = max(o.MaxViolations, 0)
	return &Auditor{o: o, changed: map[string]bool{}}
}

// NeedLeaderElection: only the leader scans and writes reports.
func (*Auditor) NeedLeaderElection() bool { return true }

// Start scans until ctx ends: at the first snapshot, at each new one, and
// every interval; in between, the namespaces whose objects changed.
func (a *Auditor) Start(ctx context.Context) error {
	var lastScan time.Time
	var stopWatches context.CancelFunc = func() {}
	defer func() { stopWatches() }()
	var lastRescan map[string]time.Time
	for {
		snap := a.o.Snapshots.Current()
		full := a.takeFull() || a.policiesChanged(ctx)
		switch {
		case snap != nil && (a.last == nil || snap != a.last.snap || full || a.o.Now().Sub(lastScan) >= a.o.Interval):
			lastScan, lastRescan = a.o.Now(), map[string]time.Time{}
			stopWatches()
			a.takeChanged(nil)
			if err := a.Scan(ctx, snap); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				a.o.Log.Error(err, "background scan")
				break
			}
			stopWatches = a.watch(ctx)
		case a.last != nil:
			due := a.takeChanged(func(ns string) bool { return a.o.Now().Sub(lastRescan[ns]) >= a.o.Settle })
			if len(due) == 0 {
				break
			}
			for _, ns := range due {
				lastRescan[ns] = a.o.Now()
			}
			if err := a.Rescan(ctx, due); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				for _, ns := range due {
					a.Changed(ns) // their reports are incomplete: again later
				}
				a.o.Log.Error(err, "background scan of changed namespaces", "namespaces", strings.Join(due, ","))
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(a.o.Poll):
		}
	}
}

// DefaultPageSize is the objects listed per request by default: a page is
// held in memory while it is evaluated, about 50 KB an object once decoded
// (a 3 KB Deployment), so 200 objects are about 10 MB.
const DefaultPageSize = 200

// Scan checks every object of the kinds snap's rules can match and writes
// the reports. A kind that cannot be listed is logged and left out (its
// objects' results are then missing from the reports); the scan goes on.
func (a *Auditor) Scan(ctx context.Context, snap *engine.Snapshot) error {
	if a.o.DuringScan != nil {
		defer a.o.DuringScan()()
	}
	start := a.o.Now()
	st := &scanState{snap: snap, policies: a.o.Policies, report: audit.NewReport(a.o.MaxResults), fails: map[string]map[ruleKey]*ruleFails{}, limit: a.o.MaxViolations}
	if a.o.PoliciesVersion != nil {
		st.policyVer, _ = a.o.PoliciesVersion(ctx) // "" when unknown: the next poll scans again
	}
	if a.o.ClusterPolicies != nil {
		p, err := a.o.ClusterPolicies(ctx)
		if err != nil {
			a.o.Log.Error(err, "reading the cluster's admission policies failed; this scan leaves them out")
		}
		st.policies = p
	}
	w, err := a.walk(ctx, snap, st.policies, st.add, nil)
	if err != nil {
		a.o.Metrics.scanned(false, w.Objects, nil)
		return err
	}
	st.resources = w.listed
	walked := a.o.Now()
	if err := a.write(ctx, st); err != nil {
		a.o.Metrics.scanned(false, w.Objects, nil)
		return err
	}
	a.last = st
	sum := st.report.Summary()
	a.o.Metrics.scanned(len(w.Unlisted) == 0, w.Objects, sum)
	a.o.Metrics.took(a.o.Now().Sub(start))
	a.o.Log.Info("background scan done", "resources", w.Resources, "objects", w.Objects, "requests", w.Requests, "fail", sum[audit.Fail], "error", sum[audit.Error],
		"pass", sum[audit.Pass], "seconds", a.o.Now().Sub(start).Seconds(), "writeSeconds", a.o.Now().Sub(walked).Seconds(), "reportSeconds", st.reportTime.Seconds(),
		"reports", len(st.report.Namespaces()), "unlisted", strings.Join(w.Unlisted, ","))
	return nil
}

// policiesChanged reports whether the cluster's admission policies
// changed since the last scan (PoliciesVersion); an error is logged and
// counts as no change.
func (a *Auditor) policiesChanged(ctx context.Context) bool {
	if a.o.PoliciesVersion == nil || a.last == nil {
		return false
	}
	v, err := a.o.PoliciesVersion(ctx)
	if err != nil {
		a.o.Log.V(1).Info("reading the cluster's admission policies' version", "error", err.Error())
		return false
	}
	return v != a.last.policyVer
}

// add counts results in the state's report and fail counts.
func (st *scanState) add(rs []audit.Result) {
	for _, r := range rs {
		r.Message = audit.CutMessage(r.Message) // as a report's are: a message may quote the object
		st.report.Add(r)
		if r.Result != audit.Fail {
			continue
		}
		ns := r.Resource.Namespace
		if st.fails[ns] == nil {
			st.fails[ns] = map[ruleKey]*ruleFails{}
		}
		k := ruleKey{Group: r.Group, Kind: r.Kind, Key: r.Policy}
		f := st.fails[ns][k]
		if f == nil {
			f = &ruleFails{}
			st.fails[ns][k] = f
		}
		f.n++
		if len(f.first) < st.limit {
			f.first = append(f.first, Violation{Resource: r.Resource, Message: r.Message})
		}
	}
}

// write writes the state's reports and the rules' counts.
func (a *Auditor) write(ctx context.Context, st *scanState) error {
	start := a.o.Now()
	if err := a.o.Store.Write(ctx, st.report, start.UTC()); err != nil {
		return fmt.Errorf("writing the reports: %w", err)
	}
	st.reportTime = a.o.Now().Sub(start)
	if a.o.Violations != nil {
		total := map[ruleKey]*ruleFails{}
		for _, ns := range slices.Sorted(maps.Keys(st.fails)) {
			for k, f := range st.fails[ns] {
				t := total[k]
				if t == nil {
					t = &ruleFails{}
					total[k] = t
				}
				t.n += f.n
				t.first = append(t.first, f.first[:min(len(f.first), st.limit-len(t.first))]...)
			}
		}
		if err := a.o.Violations.Record(ctx, ruleCounts(st.snap, total), a.o.Now()); err != nil {
			a.o.Log.Error(err, "recording the rules' violations in their status")
		}
	}
	return nil
}

// Rescan scans the objects of namespaces again ("": the cluster-scoped
// ones) with the last scan's rules and resources, and rewrites the
// reports (only the changed ones are written). Without a last scan it does
// nothing.
func (a *Auditor) Rescan(ctx context.Context, namespaces []string) error {
	st := a.last
	if st == nil {
		return nil
	}
	if a.o.DuringScan != nil {
		defer a.o.DuringScan()()
	}
	start := a.o.Now()
	for _, ns := range namespaces {
		st.report.Reset(ns)
		delete(st.fails, ns)
	}
	w, err := a.walk(ctx, st.snap, st.policies, st.add, &rescan{resources: st.resources, namespaces: namespaces})
	if err != nil {
		return err
	}
	if err := a.write(ctx, st); err != nil {
		return err
	}
	a.o.Metrics.rescanned(w.Objects)
	a.o.Log.V(1).Info("namespaces scanned again", "namespaces", strings.Join(namespaces, ","), "objects", w.Objects,
		"seconds", a.o.Now().Sub(start).Seconds())
	return nil
}

// Changed marks a namespace's objects as changed ("": a cluster-scoped
// object): Start scans it again.
func (a *Auditor) Changed(namespace string) {
	a.mu.Lock()
	a.changed[namespace] = true
	a.mu.Unlock()
}

// takeChanged takes the changed namespaces ready (nil: all), sorted.
func (a *Auditor) takeChanged(ready func(string) bool) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for ns := range a.changed {
		if ready == nil || ready(ns) {
			out = append(out, ns)
			delete(a.changed, ns)
		}
	}
	slices.Sort(out)
	return out
}

func (a *Auditor) takeFull() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.full
	a.full = false
	return f
}

// ruleCounts are the fail counts of every validating rule of snap (0
// for a rule that failed on no object), in the snapshot's order.
func ruleCounts(snap *engine.Snapshot, fails map[ruleKey]*ruleFails) []RuleCount {
	var out []RuleCount
	for _, r := range snap.Rules() {
		info := r.Info()
		if !info.Phase.Has(engine.Validate) {
			continue
		}
		c := RuleCount{Group: info.Group, Kind: info.Kind, Key: info.Key, Rule: r}
		if f := fails[ruleKey{info.Group, info.Kind, info.Key}]; f != nil {
			c.Fails, c.Violations = f.n, f.first
		}
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
	// listed are the resources listed, with the resourceVersion of their
	// lists.
	listed []resource
}

// rescan limits a walk to namespaces, over known resources.
type rescan struct {
	resources  []resource
	namespaces []string
}

// Walk lists every object of the kinds snap's rules can match, page by
// page, and gives each object's results to fn. A resource that cannot be
// listed is logged, named in Unlisted and left out; the walk goes on. The
// error is the walk's end (its context's, or discovery's).
func (a *Auditor) Walk(ctx context.Context, snap *engine.Snapshot, fn func([]audit.Result)) (Walked, error) {
	return a.walk(ctx, snap, a.o.Policies, fn, nil)
}

func (a *Auditor) walk(ctx context.Context, snap *engine.Snapshot, policies *audit.AdmissionPolicies, fn func([]audit.Result), only *rescan) (Walked, error) {
	var w Walked
	var resources []resource
	type target struct {
		r  resource
		ns string
	}
	var targets []target
	if only == nil {
		var err error
		if resources, err = a.resources(snap, policies); err != nil {
			return w, err
		}
		for _, r := range resources {
			targets = append(targets, target{r, ""})
		}
	} else {
		for _, ns := range only.namespaces {
			for _, r := range only.resources {
				if r.namespaced == (ns != "") {
					targets = append(targets, target{r, ns})
				}
			}
		}
	}
	w.Resources = len(targets)
	scanner := audit.NewScanner(snap, a.o.Readers)
	for _, t := range targets {
		n, reqs, rv, err := a.scanResource(ctx, scanner, policies, fn, t.r.gvr, t.ns)
		w.Objects += n
		w.Requests += reqs
		if err != nil {
			if ctx.Err() != nil {
				return w, ctx.Err()
			}
			w.Unlisted = append(w.Unlisted, t.r.gvr.String())
			a.o.Log.Error(err, "listing failed; its objects are left out", "resource", t.r.gvr.String())
			continue
		}
		t.r.rv = rv
		w.listed = append(w.listed, t.r)
	}
	return w, nil
}

// scanResource scans the objects of one resource (in namespace ns, or
// all), page by page: how many, in how many list requests, and the
// resourceVersion of the list.
func (a *Auditor) scanResource(ctx context.Context, scanner *audit.Scanner, policies *audit.AdmissionPolicies, fn func([]audit.Result), gvr schema.GroupVersionResource, ns string) (n, requests int, rv string, err error) {
	ctx, cancel := context.WithCancel(ctx)
	pages, wait := a.readAhead(ctx, gvr, ns)
	defer wait()
	defer cancel() // first: the reader stops, then it is waited for
	for f := range pages {
		requests += f.requests
		if f.err != nil {
			return n, requests, rv, f.err
		}
		if rv == "" {
			rv = f.page.ResourceVersion
		}
		for i, obj := range f.page.Items {
			objNS := ""
			if md, ok := obj["metadata"].(map[string]any); ok {
				objNS, _ = md["namespace"].(string)
			}
			results, err := scanner.Scan(ctx, obj, objNS)
			if err != nil {
				return n, requests, rv, err
			}
			fn(append(results, policies.Check(ctx, obj, objNS)...))
			f.page.Items[i] = nil // the collector may take it before the page ends
			n++
		}
	}
	return n, requests, rv, ctx.Err()
}

// read is one page read ahead, in how many requests, or the error that
// ended the listing.
type read struct {
	page     pages.Page
	requests int
	err      error
}

// readAhead lists a resource's pages in its own goroutine, one page ahead
// of the caller: the API server serves the next page, and it is decoded,
// while the caller evaluates the one before. The channel is unbuffered,
// so at most two pages are in memory: the one evaluated and the one being
// read. It is closed after the last page, an error, or ctx's end; wait
// returns once the reader has stopped.
func (a *Auditor) readAhead(ctx context.Context, gvr schema.GroupVersionResource, ns string) (out <-chan read, wait func()) {
	lister := a.o.Pages
	if lister == nil {
		lister = pages.Dynamic{Client: a.o.Client}
	}
	ch, done := make(chan read), make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		pager := &pages.Pager{Lister: lister, GVR: gvr, Namespace: ns, Limit: a.o.PageSize}
		for {
			before := pager.Requests
			page, ok, err := pager.Next(ctx)
			if !ok && err == nil {
				return
			}
			select {
			case ch <- read{page: page, requests: pager.Requests - before, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ch, func() { <-done }
}

// skipped are resources never scanned: events (no rule validates them,
// and there are many) and the reports themselves.
var skipped = []schema.GroupResource{{Group: "", Resource: "events"}, {Group: "events.k8s.io", Resource: "events"},
	{Group: "wgpolicyk8s.io", Resource: "policyreports"}, {Group: "wgpolicyk8s.io", Resource: "clusterpolicyreports"}}

// resources are the listable resources (preferred versions) of the kinds
// the snapshot's validating rules can match: every kind when one of them
// is not pinned to kinds.
func (a *Auditor) resources(snap *engine.Snapshot, policies *audit.AdmissionPolicies) ([]resource, error) {
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
	grs, allPolicies := policies.Resources()
	all = all || allPolicies
	if !all && len(kinds) == 0 && len(grs) == 0 {
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
	var out []resource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			matched := all || kinds[r.Kind] || slices.Contains(grs, schema.GroupResource{Group: gv.Group, Resource: r.Name})
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !matched ||
				slices.Contains(skipped, schema.GroupResource{Group: gv.Group, Resource: r.Name}) {
				continue
			}
			out = append(out, resource{gvr: gv.WithResource(r.Name), namespaced: r.Namespaced})
		}
	}
	slices.SortFunc(out, func(x, y resource) int { return strings.Compare(x.gvr.String(), y.gvr.String()) })
	return out, nil
}
