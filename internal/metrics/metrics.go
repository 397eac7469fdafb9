package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of an admission review, the "outcome" label of
// modwright_admission_reviews_total.
const (
	OutcomeAllowed = "allowed" // admitted unchanged
	OutcomePatched = "patched" // admitted with a patch
	OutcomeDenied  = "denied"  // a Reject rule matched
	OutcomeError   = "error"   // evaluation failed (deadline, panic, bad object)
	OutcomeInvalid = "invalid" // the review itself was malformed (HTTP 4xx)
)

// Metrics holds every collector. The zero value is not usable; a nil
// *Metrics is, and records nothing, so components work without metrics.
type Metrics struct {
	reviews    *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	inFlight   prometheus.Gauge
	panics     *prometheus.CounterVec
	ruleErrors *prometheus.CounterVec

	rules          *prometheus.GaugeVec
	buildSeconds   *prometheus.GaugeVec
	snapshotLoads  *prometheus.CounterVec
	snapshotTime   prometheus.Gauge
	brokenRuleInfo *prometheus.GaugeVec
}

// New creates the collectors and registers them with reg.
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		reviews: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "modwright_admission_reviews_total",
			Help: "Admission reviews answered, by webhook, operation and outcome (allowed, patched, denied, error, invalid).",
		}, []string{"webhook", "operation", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "modwright_admission_duration_seconds",
			Help:    "Time to answer one admission review, from the request's arrival to the response's encoding.",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5},
		}, []string{"webhook"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "modwright_admission_reviews_in_flight",
			Help: "Reviews being evaluated now (bounded by --max-inflight-reviews; the others wait).",
		}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "modwright_admission_panics_total",
			Help: "Panics recovered while answering admission reviews (each one is a bug: see the log).",
		}, []string{"webhook"}),
		ruleErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "modwright_rule_evaluation_errors_total",
			Help: "Rules that failed while being applied to an object (the rule was skipped for that object), by kind and rule.",
		}, []string{"kind", "rule"}),
		rules: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "modwright_rules",
			Help: "Rules of every kind in the serving snapshot, by state (ready, broken).",
		}, []string{"state"}),
		buildSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "modwright_snapshot_build_seconds",
			Help: "Duration of the last snapshot build, by phase (read, compile, index).",
		}, []string{"phase"}),
		snapshotLoads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "modwright_snapshot_builds_total",
			Help: "Snapshot builds, by result (published, failed).",
		}, []string{"result"}),
		snapshotTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "modwright_snapshot_published_timestamp_seconds",
			Help: "Unix time at which the serving snapshot was published.",
		}),
		brokenRuleInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "modwright_rule_broken",
			Help: "1 for every rule that does not compile (kept, reported, never applied), by kind and rule.",
		}, []string{"kind", "rule"}),
	}
	reg.MustRegister(m.reviews, m.duration, m.inFlight, m.panics, m.ruleErrors, m.rules, m.buildSeconds, m.snapshotLoads, m.snapshotTime, m.brokenRuleInfo)
	return m
}

// Review records one answered review.
func (m *Metrics) Review(webhook, operation, outcome string, took time.Duration) {
	if m == nil {
		return
	}
	m.reviews.WithLabelValues(webhook, operation, outcome).Inc()
	m.duration.WithLabelValues(webhook).Observe(took.Seconds())
}

// InFlight adds delta to the reviews being evaluated.
func (m *Metrics) InFlight(delta float64) {
	if m == nil {
		return
	}
	m.inFlight.Add(delta)
}

// Panic records a recovered panic.
func (m *Metrics) Panic(webhook string) {
	if m == nil {
		return
	}
	m.panics.WithLabelValues(webhook).Inc()
}

// RuleError records a rule (of kind, namespace/name) that failed on an
// object.
func (m *Metrics) RuleError(kind, rule string) {
	if m == nil {
		return
	}
	m.ruleErrors.WithLabelValues(kind, rule).Inc()
}

// RuleRef names a rule in the metrics: its kind and namespace/name.
type RuleRef struct{ Kind, Rule string }

// SnapshotBuild records a build's phases. Zero phases are left unchanged.
func (m *Metrics) SnapshotBuild(read, compile, index time.Duration) {
	if m == nil {
		return
	}
	for phase, d := range map[string]time.Duration{"read": read, "compile": compile, "index": index} {
		if d > 0 {
			m.buildSeconds.WithLabelValues(phase).Set(d.Seconds())
		}
	}
}

// SnapshotPublished records a published snapshot: its rule counts and the
// broken rules by kind and key (namespace/name). undecodable counts rule
// documents that could not even be decoded (they count as broken).
func (m *Metrics) SnapshotPublished(at time.Time, ready, undecodable int, broken []RuleRef) {
	if m == nil {
		return
	}
	m.snapshotLoads.WithLabelValues("published").Inc()
	m.snapshotTime.Set(float64(at.UnixNano()) / 1e9)
	m.rules.WithLabelValues("ready").Set(float64(ready))
	m.rules.WithLabelValues("broken").Set(float64(len(broken) + undecodable))
	m.brokenRuleInfo.Reset()
	for _, r := range broken {
		m.brokenRuleInfo.WithLabelValues(r.Kind, r.Rule).Set(1)
	}
}

// SnapshotFailed records a build that could not produce a snapshot (the
// previous one keeps serving).
func (m *Metrics) SnapshotFailed() {
	if m == nil {
		return
	}
	m.snapshotLoads.WithLabelValues("failed").Inc()
}
