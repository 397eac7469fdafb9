package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// graphMetrics are the relationship graph's and the rule packs'
// collectors (docs/graph.md, docs/rule-packs.md).
type graphMetrics struct {
	objects, edges, informers, modules prometheus.Gauge
	cacheHits, cacheMisses             prometheus.CounterFunc
	evalErrors                         *prometheus.CounterVec
}

// GraphStats are read when the metrics are scraped.
type GraphStats struct {
	// CacheHits and CacheMisses are the packs' derivation cache's counts.
	CacheHits, CacheMisses func() float64
}

func newGraphMetrics(stats GraphStats) (*graphMetrics, []prometheus.Collector) {
	g := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	zero := func() float64 { return 0 }
	if stats.CacheHits == nil {
		stats.CacheHits = zero
	}
	if stats.CacheMisses == nil {
		stats.CacheMisses = zero
	}
	m := &graphMetrics{
		objects:   g("modwright_graph_objects", "Objects the relationship graph holds (from the operator's informers)."),
		edges:     g("modwright_graph_edges", "Edges of the relationship graph."),
		informers: g("modwright_graph_informers", "Informers feeding the graph: the core kinds' and one per custom resource a rule pack routes."),
		modules:   g("modwright_rego_modules_loaded", "Rego modules of the rule packs loaded."),
		cacheHits: prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "modwright_rego_cache_hits_total",
			Help: "Edge derivations answered from the rule packs' cache (same uid, resourceVersion and rules)."}, stats.CacheHits),
		cacheMisses: prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "modwright_rego_cache_misses_total",
			Help: "Edge derivations the rule packs evaluated."}, stats.CacheMisses),
		evalErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "modwright_rego_eval_errors_total",
			Help: "Rule-pack module evaluations that failed (the module is skipped for that object), by reason: timeout, panic, shape, error."}, []string{"reason"}),
	}
	return m, []prometheus.Collector{m.objects, m.edges, m.informers, m.modules, m.cacheHits, m.cacheMisses, m.evalErrors}
}

// Graph is the graph's and packs' metrics, registered with reg.
type Graph struct{ m *graphMetrics }

// NewGraph creates the graph's collectors and registers them with reg.
func NewGraph(reg prometheus.Registerer, stats GraphStats) *Graph {
	m, cs := newGraphMetrics(stats)
	reg.MustRegister(cs...)
	return &Graph{m: m}
}

// Size records the graph's objects and edges.
func (g *Graph) Size(objects, edges int) {
	if g == nil {
		return
	}
	g.m.objects.Set(float64(objects))
	g.m.edges.Set(float64(edges))
}

// Informers records the informers feeding the graph.
func (g *Graph) Informers(n int) {
	if g == nil {
		return
	}
	g.m.informers.Set(float64(n))
}

// ModulesLoaded records the rule packs' modules.
func (g *Graph) ModulesLoaded(n int) {
	if g == nil {
		return
	}
	g.m.modules.Set(float64(n))
}

// EvalError records a failed module evaluation: reason is timeout, panic,
// shape or error.
func (g *Graph) EvalError(reason string) {
	if g == nil {
		return
	}
	g.m.evalErrors.WithLabelValues(reason).Inc()
}
