package kinds

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/modwright/modwright/internal/engine"
)

// What a kind contributes to the server beyond compiling rules, through
// the registry, so that the webhook, the metrics, the rule source and the
// operator name no kind.

// An Observer is a kind's own record of what the server does with its
// rules (its peer's metric names): told of every snapshot published and of
// every decision made. It is safe for concurrent use.
type Observer interface {
	// Collectors are its metrics, registered by the server.
	Collectors() []prometheus.Collector
	// Published is told of each snapshot before it serves.
	Published(snap *engine.Snapshot)
	// Decided is told of each decision of the dragnet webhook.
	Decided(req engine.Request, dec *engine.Decision)
}

// Observed is a Kind with an Observer; kinds that share one return the
// same.
type Observed interface {
	Observer() Observer
}

// Observers are the registry's kinds' observers, each once.
func (r *Registry) Observers() []Observer {
	var out []Observer
	for _, k := range r.kinds {
		if o, ok := k.(Observed); ok && o.Observer() != nil && !slices.Contains(out, o.Observer()) {
			out = append(out, o.Observer())
		}
	}
	return out
}

// A Path is a webhook path of the kinds' own, where the server can serve
// their rules alone (behind the webhook configurations their peer
// installed), the dragnet then leaving them out.
type Path struct {
	// Path is the URL path ("/mutate"); Name names its handler in metrics
	// and logs.
	Path, Name string
	// Kinds are the kinds served there.
	Kinds []string
}

// PathServed is a Kind with a path of its own.
type PathServed interface {
	// OwnPath is the path the kind's rules may be served at.
	OwnPath() (path, name string)
}

// Paths are the paths of the registry's kinds, in registration order,
// each with every kind served there.
func (r *Registry) Paths() []Path {
	var out []Path
	for _, k := range r.kinds {
		ps, ok := k.(PathServed)
		if !ok {
			continue
		}
		path, name := ps.OwnPath()
		i := slices.IndexFunc(out, func(p Path) bool { return p.Path == path })
		if i < 0 {
			out = append(out, Path{Path: path, Name: name})
			i = len(out) - 1
		}
		out[i].Kinds = append(out[i].Kinds, k.Name())
	}
	return out
}

// NodeAnnotations are the Pod annotations of a kind whose rules read a
// Pod's node from the Pod itself: the operator's pods/binding webhook
// writes the node's name to Record when a Pod annotated Ask: "true" is
// bound.
type NodeAnnotations struct {
	Ask, Record string
}

// NodeRecorded is a Kind whose rules read the node a Pod is bound to.
type NodeRecorded interface {
	NodeAnnotations() NodeAnnotations
}

// NodeAnnotations are those of the registry's kinds, each pair once.
func (r *Registry) NodeAnnotations() []NodeAnnotations {
	var out []NodeAnnotations
	for _, k := range r.kinds {
		if n, ok := k.(NodeRecorded); ok && !slices.Contains(out, n.NodeAnnotations()) {
			out = append(out, n.NodeAnnotations())
		}
	}
	return out
}

// A Stored Definer's definitions live in the cluster as objects of their
// own kind (Gatekeeper's ConstraintTemplates): the rule source watches
// them, compiles them through WithDefinitions and watches the rule kinds
// they define.
type Stored interface {
	Definer
	// DefinitionKind is the group, version and kind the definitions are
	// watched as.
	DefinitionKind() (group, version, kind string)
}

// A Definition is what one compiled definition defines.
type Definition struct {
	// By is the definition's name, UID its uid and Generation its
	// metadata.generation, as given (zero when unknown).
	By         string
	UID        string
	Generation int64
	// Kind is the rule kind it defines, in the Definer's group.
	Kind string
	// CRD is the CustomResourceDefinition the operator installs for Kind;
	// nil when the definition does not compile (the CRD installed, if
	// any, is left as it is).
	CRD map[string]any
}

// Defining is implemented by the kind a Definer's WithDefinitions returns:
// what its definitions define, and the status the operator writes on a
// definition.
type Defining interface {
	// Defined lists the kinds the definitions define (those that do not
	// compile too: their rules are kept, broken), by kind.
	Defined() []Definition
	// DefinitionStatus is the status of definition m as the replica id
	// sees it: compileErr is why it does not compile (nil when it does),
	// installErr why its CRD could not be installed, created whether the
	// CRD is installed.
	DefinitionStatus(m *Manifest, id string, compileErr, installErr error, created bool) map[string]any
}

// A SyncConfig is a kind of object that configures the inventory
// (engine.InventoryReader) in the cluster: Gatekeeper's Config (named
// config) and SyncSet.
type SyncConfig struct {
	Group, Version, Kind string
	// Name, when set, is the only name read.
	Name string
}

// SyncedKind is a kind the inventory holds.
type SyncedKind struct{ Group, Version, Kind string }

// Syncing is a Kind whose rules read the inventory, configured by objects
// in the cluster.
type Syncing interface {
	// SyncConfigs are the kinds that configure it.
	SyncConfigs() []SyncConfig
	// Synced reads what one configuration object asks the inventory to
	// hold, and which namespaces it exempts from a process (nil: none):
	// Gatekeeper's "sync" (the inventory), "webhook", "audit",
	// "mutation-webhook".
	Synced(obj map[string]any) (kinds []SyncedKind, excluded func(process, namespace string) bool)
}

// A Violation is one object a rule fails in the background scan.
type Violation struct {
	APIVersion, Kind, Namespace, Name string
	Message                           string
}

// ViolationsListed is a Kind whose rules' status lists the first
// violations the background scan found (Gatekeeper's constraints:
// status.violations), each entry as its peer writes it.
type ViolationsListed interface {
	StatusViolation(r engine.Rule, v Violation) map[string]any
}

// StatusWritten is a Kind whose rules' status the operator writes in its
// peer's shape (Gatekeeper's constraints: status.byPod) instead of the
// Ready condition.
type StatusWritten interface {
	// RuleStatus is the status of rule m as the replica id sees it: err is
	// why it does not compile (nil when it does).
	RuleStatus(m *Manifest, id string, err error) map[string]any
}
