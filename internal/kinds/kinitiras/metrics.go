package kinitiras

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
)

// Metrics is the kinds' kinds.Observer: their outcomes counted under the
// names kinitiras' webhook used (kcloudlabs_*), so that its users'
// dashboards and alerts keep working. Safe for concurrent use.
type Metrics struct {
	total     *prometheus.GaugeVec
	overrides *prometheus.CounterVec
	rejects   *prometheus.CounterVec
	errors    *prometheus.CounterVec
	successes *prometheus.CounterVec
}

var _ kinds.Observer = (*Metrics)(nil)

// NewMetrics creates the collectors (registered by the server through
// Collectors).
func NewMetrics() *Metrics {
	c := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kcloudlabs", Name: name, Help: help}, labels)
	}
	return &Metrics{
		total: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "kcloudlabs", Name: "policy_total_number",
			Help: "kinitiras' policies in the serving snapshot, by policy_type (kinitiras' name)."}, []string{"policy_type"}),
		overrides: c("override_policy_override_count", "Objects overridden by each override policy (kinitiras' name).", "name", "resource_type"),
		rejects:   c("validate_policy_reject_count", "Objects rejected by each validate policy (kinitiras' name).", "name", "resource_type"),
		errors:    c("policy_error_count", "Policy failures on an object (kinitiras' name).", "name", "resource_type", "error_type"),
		successes: c("policy_success_count", "Policies applied to an object without error (kinitiras' name).", "name", "resource_type"),
	}
}

// Collectors are the kcloudlabs_* metrics.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.total, m.overrides, m.rejects, m.errors, m.successes}
}

// isKind reports whether a rule kind is one of kinitiras'.
func isKind(kind string) bool {
	return kind == KindOverridePolicy || kind == KindClusterOverride || kind == KindClusterValidate
}

// Published records how many policies of each kind the snapshot holds.
func (m *Metrics) Published(snap *engine.Snapshot) {
	byKind := map[string]int{KindOverridePolicy: 0, KindClusterOverride: 0, KindClusterValidate: 0}
	for _, r := range snap.Rules() {
		if k := r.Info().Kind; isKind(k) {
			byKind[k]++
		}
	}
	for k, n := range byKind {
		m.total.WithLabelValues(k).Set(float64(n))
	}
}

// Decided records the policies applied to an object, their rejections
// and failures, the resource labelled as kinitiras prints a
// GroupVersionKind ("apps/v1, Kind=Deployment").
func (m *Metrics) Decided(req engine.Request, dec *engine.Decision) {
	// Most decisions hold no kinitiras policy: the label is built only
	// for one that does.
	resourceType := ""
	label := func() string {
		if resourceType == "" {
			resourceType = req.Kind.Version + ", Kind=" + req.Kind.Kind
			if req.Kind.Group != "" {
				resourceType = req.Kind.Group + "/" + resourceType
			}
		}
		return resourceType
	}
	for _, r := range dec.Applied {
		if isKind(r.Kind) {
			m.overrides.WithLabelValues(policyName(r.Key), label()).Inc()
			m.successes.WithLabelValues(policyName(r.Key), label()).Inc()
		}
	}
	for _, r := range dec.Rejections {
		if isKind(r.Kind) {
			m.rejects.WithLabelValues(policyName(r.Rule), label()).Inc()
		}
	}
	for _, e := range dec.Errors {
		if e.Rule != "" && isKind(e.Kind) {
			m.errors.WithLabelValues(policyName(e.Rule), label(), "cue_execute_error").Inc()
		}
	}
}

// policyName is a rule key's name (kinitiras labels by name, without the
// namespace).
func policyName(key string) string {
	return key[strings.LastIndex(key, "/")+1:]
}
