package generator

import "github.com/prometheus/client_golang/prometheus"

// Metrics count what the generator did. A nil *Metrics records nothing.
type Metrics struct {
	objects *prometheus.CounterVec
	records *prometheus.CounterVec
}

// NewMetrics creates the collectors and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{objects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "modwright_generate_objects_total",
		Help: "Generated objects by outcome: created (once), applied (synchronized), exists (created before: left as it is), deleted (with its trigger), patched (an existing object a rule changed), marked (a synchronized object written before marks, marked with its rule), failed (given up), dropped (the queue was full)."},
		[]string{"outcome"}),
		records: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "modwright_generate_records_total",
			Help: "GenerateRequest records of queued generate work by outcome: written, failed (not written: the work is done without one), recovered (a stale record's work taken up by the leader)."},
			[]string{"outcome"})}
	reg.MustRegister(m.objects, m.records)
	return m
}

func (m *Metrics) count(outcome string) {
	if m != nil {
		m.objects.WithLabelValues(outcome).Inc()
	}
}

func (m *Metrics) record(outcome string) {
	if m != nil {
		m.records.WithLabelValues(outcome).Inc()
	}
}
