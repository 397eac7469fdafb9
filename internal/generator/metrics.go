package generator

import "github.com/prometheus/client_golang/prometheus"

// Metrics count what the generator did. A nil *Metrics records nothing.
type Metrics struct {
	objects *prometheus.CounterVec
}

// NewMetrics creates the collectors and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{objects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "modwright_generate_objects_total",
		Help: "Generated objects by outcome: created (once), applied (synchronized), exists (created before: left as it is), deleted (with its trigger), patched (an existing object a rule changed), failed (given up), dropped (the queue was full)."},
		[]string{"outcome"})}
	reg.MustRegister(m.objects)
	return m
}

func (m *Metrics) count(outcome string) {
	if m != nil {
		m.objects.WithLabelValues(outcome).Inc()
	}
}
