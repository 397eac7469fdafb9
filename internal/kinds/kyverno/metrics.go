package kyverno

import (
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	kyvernov1 "github.com/modwright/modwright/api/kyverno/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
)

// Metrics is the kinds' kinds.Observer: the policies' rules and their
// results under the names and labels of Kyverno's own metrics
// (kyverno_policy_results_total, kyverno_policy_rule_info_total), so that
// its users' dashboards and alerts keep working. It counts only once a
// server has taken its collectors (offline runs pay nothing). Safe for
// concurrent use.
type Metrics struct {
	on      atomic.Bool
	results *prometheus.CounterVec
	info    *prometheus.GaugeVec
}

var _ kinds.Observer = (*Metrics)(nil)

// resultLabels are kyverno_policy_results_total's labels, in Kyverno's
// names.
var resultLabels = []string{"policy_validation_mode", "policy_type", "policy_background_mode", "policy_namespace", "policy_name",
	"resource_kind", "resource_namespace", "resource_request_operation", "rule_name", "rule_result", "rule_type", "rule_execution_cause", "dry_run"}

// NewMetrics creates the collectors (registered by the server through
// Collectors).
func NewMetrics() *Metrics {
	return &Metrics{
		results: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kyverno_policy_results_total",
			Help: "Results of Kyverno policies' rules on objects (Kyverno's name and labels), by policy, rule, result and resource."}, resultLabels),
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kyverno_policy_rule_info_total",
			Help: "1 for every rule (autogen rules included) of the Kyverno policies served (Kyverno's name and labels); status_ready is false for a policy that does not compile."},
			[]string{"policy_namespace", "policy_name", "status_ready", "policy_validation_mode", "policy_type", "policy_background_mode", "rule_name", "rule_type"}),
	}
}

// Collectors are the kyverno_* metrics; from this call on, results are
// counted.
func (m *Metrics) Collectors() []prometheus.Collector {
	m.on.Store(true)
	return []prometheus.Collector{m.results, m.info}
}

// policyLabels are a policy's labels, as Kyverno gives them: mode,
// type, background mode, namespace ("-" for a ClusterPolicy), name.
func (p *Policy) policyLabels() (mode, typ, background, ns string) {
	mode, typ, ns = "audit", "cluster", "-"
	if p.enforce {
		mode = "enforce"
	}
	if p.kind == kyvernov1.KindPolicy {
		typ, ns = "namespaced", p.ns
	}
	return mode, typ, strconv.FormatBool(p.background), ns
}

// Published sets the rule info of the snapshot's policies (the gauge is
// rebuilt: rules gone are gone).
func (m *Metrics) Published(snap *engine.Snapshot) {
	if !m.on.Load() {
		return
	}
	m.info.Reset()
	for _, r := range snap.Rules() {
		p, ok := r.(*Policy)
		if !ok {
			continue
		}
		mode, typ, bg, ns := p.policyLabels()
		ready := strconv.FormatBool(p.info.Err == nil)
		for _, pr := range p.rules {
			m.info.WithLabelValues(ns, p.name, ready, mode, typ, bg, pr.name, pr.typ).Set(1)
		}
	}
}

// Decided has nothing to add: a policy counts its results as it
// evaluates (the webhook records no trace).
func (m *Metrics) Decided(engine.Request, *engine.Decision) {}

// record counts a policy's results on a request.
func (m *Metrics) record(p *Policy, req *engine.Request, results []RuleResult, evaluated []*rule) {
	if m == nil || !m.on.Load() || len(results) == 0 {
		return
	}
	mode, typ, bg, ns := p.policyLabels()
	kind := req.Kind.Kind
	if kind == "" {
		if o, ok := req.Object.(map[string]any); ok {
			kind, _ = o["kind"].(string)
		}
	}
	op, dry := strings.ToLower(string(req.Operation)), strconv.FormatBool(req.DryRun)
	cause := "admission_request"
	if req.Background {
		cause = "background_scan"
	}
	for i, res := range results {
		m.results.WithLabelValues(mode, typ, bg, ns, p.name, kind, req.Namespace, op, res.Rule, string(res.Status), evaluated[i].typ, cause, dry).Inc()
	}
}
