package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// kinitiras' policy kinds, whose outcomes are also counted under the
// names kinitiras' webhook used (kcloudlabs_*), so that its users'
// dashboards and alerts keep working.
var kcloudlabsKinds = map[string]bool{"OverridePolicy": true, "ClusterOverridePolicy": true, "ClusterValidatePolicy": true}

// kcloudlabs are kinitiras' collectors.
type kcloudlabs struct {
	total                                 *prometheus.GaugeVec
	overrides, rejects, errors, successes *prometheus.CounterVec
}

func newKcloudlabs() (*kcloudlabs, []prometheus.Collector) {
	c := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kcloudlabs", Name: name, Help: help}, labels)
	}
	k := &kcloudlabs{
		total: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "kcloudlabs", Name: "policy_total_number",
			Help: "kinitiras' policies in the serving snapshot, by policy_type (kinitiras' name)."}, []string{"policy_type"}),
		overrides: c("override_policy_override_count", "Objects overridden by each override policy (kinitiras' name).", "name", "resource_type"),
		rejects:   c("validate_policy_reject_count", "Objects rejected by each validate policy (kinitiras' name).", "name", "resource_type"),
		errors:    c("policy_error_count", "Policy failures on an object (kinitiras' name).", "name", "resource_type", "error_type"),
		successes: c("policy_success_count", "Policies applied to an object without error (kinitiras' name).", "name", "resource_type"),
	}
	return k, []prometheus.Collector{k.total, k.overrides, k.rejects, k.errors, k.successes}
}

// policyName is a rule key's name (kinitiras labels by name, without
// the namespace).
func policyName(key string) string {
	return key[strings.LastIndex(key, "/")+1:]
}

// PolicyApplied records a kinitiras override policy applied to an object
// of resourceType ("apps/v1, Kind=Deployment", as kinitiras prints a
// GroupVersionKind); other kinds are not recorded here.
func (m *Metrics) PolicyApplied(kind, key, resourceType string) {
	if m == nil || !kcloudlabsKinds[kind] {
		return
	}
	m.kcloudlabs.overrides.WithLabelValues(policyName(key), resourceType).Inc()
	m.kcloudlabs.successes.WithLabelValues(policyName(key), resourceType).Inc()
}

// PolicyRejected records a kinitiras validate policy's rejection.
func (m *Metrics) PolicyRejected(kind, key, resourceType string) {
	if m == nil || !kcloudlabsKinds[kind] {
		return
	}
	m.kcloudlabs.rejects.WithLabelValues(policyName(key), resourceType).Inc()
}

// PolicyFailed records a kinitiras policy's failure on an object.
func (m *Metrics) PolicyFailed(kind, key, resourceType string) {
	if m == nil || !kcloudlabsKinds[kind] {
		return
	}
	m.kcloudlabs.errors.WithLabelValues(policyName(key), resourceType, "cue_execute_error").Inc()
}

// PolicyTotals records how many rules of each kinitiras kind the serving
// snapshot holds.
func (m *Metrics) PolicyTotals(byKind map[string]int) {
	if m == nil {
		return
	}
	for kind := range kcloudlabsKinds {
		m.kcloudlabs.total.WithLabelValues(kind).Set(float64(byKind[kind]))
	}
}
