package kinds

import (
	"fmt"
	"slices"
	"strings"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
)

// Manifest is one rule document as read (a file's document, an informer's
// object): its kind and apiVersion, its JSON text and the decoded tree.
type Manifest struct {
	// Origin names where it came from ("rules.yaml:12", its first line), for
	// messages; may be empty.
	Origin string
	// Object is the decoded object (numbers as json.Number), JSON its
	// text; both describe the same object.
	Object map[string]any
	JSON   []byte
	// Where the text is, for positions (source.Locate): the file's Path,
	// the Line its document starts on, its Text, and the FieldPrefix of
	// the object within it ("items[2]." for an item of a List); Line is 0
	// when unknown.
	Path, FieldPrefix string
	Line              int
	Text              []byte
}

// Kind returns the manifest's kind.
func (m *Manifest) Kind() string { s, _ := m.Object["kind"].(string); return s }

// APIVersion returns the manifest's apiVersion.
func (m *Manifest) APIVersion() string { s, _ := m.Object["apiVersion"].(string); return s }

// Group returns the API group of the apiVersion ("" for the core group).
func (m *Manifest) Group() string {
	g, _, ok := strings.Cut(m.APIVersion(), "/")
	if !ok {
		return ""
	}
	return g
}

// Name returns metadata.name, Namespace metadata.namespace.
func (m *Manifest) Name() string      { return m.meta("name") }
func (m *Manifest) Namespace() string { return m.meta("namespace") }

// Key is namespace/name, or the name alone without a namespace: how
// engine.RuleInfo.Key names a rule, read before decoding so that
// undecodable documents have one too.
func (m *Manifest) Key() string { return rules.Key(m.Namespace(), m.Name()) }

func (m *Manifest) meta(k string) string {
	md, _ := m.Object["metadata"].(map[string]any)
	s, _ := md[k].(string)
	return s
}

// Kind is one rule kind's adapter, as the front ends see it: which
// manifests it owns, and compiling one into an engine.Rule. An adapter
// (internal/kinds/modrule) holds its compile configuration and caches; it
// is safe for concurrent use.
type Kind interface {
	// Name is the kind as manifests spell it ("ModRule").
	Name() string
	// Group is its API group ("api.kubemod.io"), Versions the versions
	// served ("v1beta1"), the first being the one informers watch.
	Group() string
	Versions() []string
	// Compile decodes a manifest of the kind strictly and compiles it. A
	// manifest that cannot be decoded gives (nil, err); one that decodes
	// but does not compile gives the rule, with the error in its
	// Info().Err, and that error (a *rules.CompileError); the errors do
	// not name the manifest's Origin (callers add it).
	Compile(m *Manifest) (engine.Rule, error)
}

// Admitter is implemented by the kinds whose manifests the operator's rule
// webhooks complete and check beyond compiling them (kinitiras' policy
// webhook renders templates into renderedCue and refuses templates that do
// not render).
type Admitter interface {
	// Default returns the JSON patch (an array) that completes a created
	// or updated manifest, nil for none.
	Default(m *Manifest) ([]byte, error)
	// Check returns why a manifest that compiles must still be refused
	// (a *rules.CompileError), nil when it is admitted.
	Check(m *Manifest) error
}

// Renamed is implemented by a kind read under a former name for a while
// (modwright's Policy, now ModwrightPolicy): the front ends warn about its
// rules (apply, lint, the operator's status) and list only current names.
type Renamed interface {
	// RenamedTo is the kind's current name ("ModwrightPolicy").
	RenamedTo() string
}

// CurrentName is k's name, or the name it was renamed to: two rules of a
// kind under its two names are one rule twice.
func CurrentName(k Kind) string {
	if r, ok := k.(Renamed); ok {
		return r.RenamedTo()
	}
	return k.Name()
}

// Deprecation says why a rule of k should be rewritten ("" when it need
// not): k is read under a former name.
func Deprecation(k Kind) string {
	r, ok := k.(Renamed)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s/%s %s is deprecated: write kind %s (the same spec); the old name, which Kyverno's kinds have too, is read for one more release",
		k.Group(), k.Versions()[0], k.Name(), r.RenamedTo())
}

// GroupOwner is implemented by an adapter that owns every kind of its
// group, kinds that other documents define (Gatekeeper's constraints,
// whose kinds ConstraintTemplates name); Name is then what its rules are
// called in messages, and each rule's RuleInfo.Kind its own kind.
type GroupOwner interface {
	// OwnedKinds says which kinds it owns, for messages ("kinds that
	// ConstraintTemplates define").
	OwnedKinds() string
}

// Definer is implemented by a kind whose rules compile against documents
// of other kinds given with them (Gatekeeper's constraints, against their
// ConstraintTemplates): the definitions are not rules, and the front ends
// hand them to the kind before compiling its rules.
type Definer interface {
	// Defines reports whether m is a definition the kind reads.
	Defines(m *Manifest) bool
	// WithDefinitions compiles defs and returns the kind compiling rules
	// against them, with each definition's error (nil when it compiled;
	// a *rules.CompileError naming its fields) in defs' order.
	WithDefinitions(defs []*Manifest) (Kind, []error)
}

// RuleKind is the kind a rule of m is reported under: k's current name,
// or m's own kind for a GroupOwner.
func RuleKind(k Kind, m *Manifest) string {
	if _, ok := k.(GroupOwner); ok {
		return m.Kind()
	}
	return CurrentName(k)
}

// Registry holds the kinds modwright serves. It is immutable.
type Registry struct {
	kinds []Kind
}

// NewRegistry returns a registry of ks.
func NewRegistry(ks ...Kind) *Registry { return &Registry{kinds: ks} }

// Kinds returns the kinds, in registration order.
func (r *Registry) Kinds() []Kind { return r.kinds }

// For returns the kind that owns a manifest (by group and kind, whatever
// the version: a version not served is the kind's error to report), or
// nil.
func (r *Registry) For(m *Manifest) Kind {
	g, k := m.Group(), m.Kind()
	for _, kd := range r.kinds {
		if kd.Group() != g {
			continue
		}
		if _, owner := kd.(GroupOwner); owner || kd.Name() == k {
			return kd
		}
	}
	return nil
}

// Defines reports whether m is a definition a kind of r reads (not a
// rule, but part of the rules: a ConstraintTemplate).
func (r *Registry) Defines(m *Manifest) bool {
	for _, kd := range r.kinds {
		if d, ok := kd.(Definer); ok && d.Defines(m) {
			return true
		}
	}
	return false
}

// Owns reports whether m is a rule of a kind of r, or a definition one
// reads.
func (r *Registry) Owns(m *Manifest) bool { return r.For(m) != nil || r.Defines(m) }

// WithDefinitions returns r with each Definer given its definitions among
// docs (the kind returned by its WithDefinitions in its place), and the
// definitions' errors by index in docs (nil entries and a nil map when
// every definition compiled). r is returned as is when no kind defines.
func (r *Registry) WithDefinitions(docs []*Manifest) (*Registry, map[int]error) {
	var errs map[int]error
	out := r
	for i, kd := range r.kinds {
		d, ok := kd.(Definer)
		if !ok {
			continue
		}
		var defs []*Manifest
		var at []int
		for j, m := range docs {
			if d.Defines(m) {
				defs, at = append(defs, m), append(at, j)
			}
		}
		nk, derrs := d.WithDefinitions(defs)
		for n, err := range derrs {
			if err != nil {
				if errs == nil {
					errs = map[int]error{}
				}
				errs[at[n]] = err
			}
		}
		if out == r {
			out = &Registry{kinds: slices.Clone(r.kinds)}
		}
		out.kinds[i] = nk
	}
	return out, errs
}

// Served lists the kinds with their apiVersions for messages:
// "api.kubemod.io/v1beta1 ModRule, modwright.io/v1alpha1 ModwrightPolicy"
// (former names left out; a kind served in more versions: "kyverno.io/v1
// ClusterPolicy (also v2beta1)").
func (r *Registry) Served() string {
	out := make([]string, 0, len(r.kinds))
	for _, k := range r.kinds {
		if _, old := k.(Renamed); old {
			continue
		}
		name := k.Name()
		if g, ok := k.(GroupOwner); ok {
			name = "<" + g.OwnedKinds() + ">"
		}
		vs := k.Versions()
		gv := vs[0]
		if k.Group() != "" {
			gv = k.Group() + "/" + gv
		}
		what := gv + " " + name
		if len(vs) > 1 {
			what += " (also " + strings.Join(vs[1:], ", ") + ")"
		}
		out = append(out, what)
	}
	return strings.Join(out, ", ")
}

// Names lists the kinds' current names for messages: "ModRule",
// "ModRule or ModwrightPolicy", "ModRule, ModwrightPolicy or
// ClusterModwrightPolicy".
func (r *Registry) Names() string {
	names := make([]string, 0, len(r.kinds))
	for _, k := range r.kinds {
		if _, old := k.(Renamed); !old {
			names = append(names, k.Name())
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
