package auditor

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/modwright/modwright/internal/audit"
)

// Metrics are the background scan's metrics. A nil *Metrics records
// nothing.
type Metrics struct {
	objects  prometheus.Counter
	rescans  prometheus.Counter
	scans    *prometheus.CounterVec
	results  *prometheus.GaugeVec
	duration prometheus.Gauge
	writes   *prometheus.CounterVec
}

// NewMetrics creates the collectors and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		objects: prometheus.NewCounter(prometheus.CounterOpts{Name: "modwright_audit_objects_scanned_total",
			Help: "Objects the background scan evaluated."}),
		rescans: prometheus.NewCounter(prometheus.CounterOpts{Name: "modwright_audit_namespace_rescans_total",
			Help: "Scans of the namespaces whose objects changed between full scans."}),
		scans: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "modwright_audit_scans_total",
			Help: "Background scans, by outcome (complete; partial: a resource could not be listed; failed)."}, []string{"outcome"}),
		results: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "modwright_audit_results",
			Help: "Results of the last complete background scan, by result (pass, fail, warn, error, skip)."}, []string{"result"}),
		duration: prometheus.NewGauge(prometheus.GaugeOpts{Name: "modwright_audit_scan_duration_seconds",
			Help: "Duration of the last background scan."}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "modwright_audit_report_writes_total",
			Help: "Report objects written by the background scan, by operation (create, update, delete); unchanged reports are not written."}, []string{"operation"}),
	}
	reg.MustRegister(m.objects, m.rescans, m.scans, m.results, m.duration, m.writes)
	return m
}

func (m *Metrics) scanned(complete bool, objects int, sum map[audit.Status]int) {
	if m == nil {
		return
	}
	m.objects.Add(float64(objects))
	switch {
	case sum == nil:
		m.scans.WithLabelValues("failed").Inc()
		return
	case complete:
		m.scans.WithLabelValues("complete").Inc()
	default:
		m.scans.WithLabelValues("partial").Inc()
	}
	for _, s := range audit.Statuses {
		m.results.WithLabelValues(string(s)).Set(float64(sum[s]))
	}
}

func (m *Metrics) took(d time.Duration) {
	if m != nil {
		m.duration.Set(d.Seconds())
	}
}

func (m *Metrics) wrote(op string) {
	if m != nil {
		m.writes.WithLabelValues(op).Inc()
	}
}

func (m *Metrics) rescanned(objects int) {
	if m != nil {
		m.rescans.Inc()
		m.objects.Add(float64(objects))
	}
}
