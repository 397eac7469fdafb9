package packs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modwright/modwright/internal/graph"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/lang/rego"
)

// KubeAtlasVersion is the KubeAtlas engine version whose rule-pack contract
// (rego_api v1) modwright satisfies: a pack's `kubeatlas` constraint is
// checked against it.
const KubeAtlasVersion = "1.5.0"

// The loader's errors, checked with errors.Is. A pack that fails is
// skipped; the others load.
var (
	// ErrIncompatibleRegoAPI: rego_api is not v1 (missing included).
	ErrIncompatibleRegoAPI = errors.New("incompatible rego_api")
	// ErrIncompatibleKubeAtlas: the pack's kubeatlas constraint excludes
	// KubeAtlasVersion.
	ErrIncompatibleKubeAtlas = errors.New("incompatible kubeatlas version")
	// ErrInvalidMetadata: metadata.yaml lacks a required field or is wrong.
	ErrInvalidMetadata = errors.New("invalid pack metadata")
	// ErrInvalidConstraint: the kubeatlas constraint is not a semver
	// constraint.
	ErrInvalidConstraint = errors.New("invalid kubeatlas constraint")
	// ErrParse: metadata.yaml is not YAML.
	ErrParse = errors.New("cannot parse metadata.yaml")
	// ErrShape: a rule's output is not a set of edges.
	ErrShape = errors.New("rule output is not a set of edges")
	// ErrInvalidRef: an OCI reference is not repository:semver-tag.
	ErrInvalidRef = errors.New("invalid OCI reference")
)

// Metadata is a pack's metadata.yaml.
type Metadata struct {
	Name        string       `json:"name"`
	Version     string       `json:"version"`
	RegoAPI     string       `json:"rego_api"`
	KubeAtlas   string       `json:"kubeatlas"`
	Description string       `json:"description,omitempty"`
	Maintainers []string     `json:"maintainers,omitempty"`
	Modules     []ModuleMeta `json:"modules"`
}

// ModuleMeta is one module of a pack.
type ModuleMeta struct {
	Name       string `json:"name"`
	File       string `json:"file"`
	Entrypoint string `json:"entrypoint"`
	Match      Match  `json:"match"`
}

// Match routes resources to a module: group (the part of apiVersion
// before "/", "" for the core group) and kind; both empty: every resource.
type Match struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
}

func (m Match) catchAll() bool { return m.Group == "" && m.Kind == "" }

// ValidateMetadata checks the fields every pack needs.
func ValidateMetadata(m *Metadata) error {
	switch {
	case m.Name == "":
		return fmt.Errorf("%w: name required", ErrInvalidMetadata)
	case m.Version == "":
		return fmt.Errorf("%w: %s: version required", ErrInvalidMetadata, m.Name)
	case m.RegoAPI != "v1":
		return fmt.Errorf("%w: pack %s declares rego_api %q; this engine serves v1", ErrIncompatibleRegoAPI, m.Name, m.RegoAPI)
	case m.KubeAtlas == "":
		return fmt.Errorf("%w: %s: kubeatlas (a semver constraint on the engine) required", ErrInvalidMetadata, m.Name)
	}
	for i, mod := range m.Modules {
		if mod.Name == "" || mod.File == "" || mod.Entrypoint == "" {
			return fmt.Errorf("%w: %s: modules[%d] needs name, file and entrypoint", ErrInvalidMetadata, m.Name, i)
		}
	}
	return nil
}

// CheckConstraint checks a pack's kubeatlas constraint against an engine
// version; an engine version that is not semver (a dev build) satisfies
// every constraint.
func CheckConstraint(constraint, engineVersion string) error {
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return fmt.Errorf("%w %q: %v", ErrInvalidConstraint, constraint, err)
	}
	v, err := semver.NewVersion(engineVersion)
	if err != nil {
		return nil
	}
	if !c.Check(v) {
		return fmt.Errorf("%w: the pack needs kubeatlas %s; this engine satisfies %s", ErrIncompatibleKubeAtlas, constraint, engineVersion)
	}
	return nil
}

// Pack is a loaded pack: its metadata and its compiled modules.
type Pack struct {
	Metadata
	Modules []*Module
}

// Module is one compiled module of a pack.
type Module struct {
	Key   string // <pack>/<module>
	Match Match
	prog  *rego.Program
	hash  string // of its key, match, entrypoint and source
}

// SourceModule is a module given by its source (Register).
type SourceModule struct {
	Name, Source, Entrypoint string
	Match                    Match
}

// LoadDir loads the pack in dir for engineVersion: metadata.yaml, checked,
// then each module's .rego file, compiled once. A missing metadata.yaml or
// .rego file wraps fs.ErrNotExist; timeout is each evaluation's budget
// (clamped; 0: the default).
func LoadDir(ctx context.Context, dir, engineVersion string, timeout time.Duration) (*Pack, error) {
	return load(ctx, dir, func(name string) ([]byte, error) {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if rel, err := filepath.Rel(dir, path); err != nil || strings.HasPrefix(rel, "..") {
			return nil, errOutside
		}
		return os.ReadFile(path)
	}, engineVersion, timeout)
}

// errOutside: a module's file is outside the pack.
var errOutside = errors.New("outside the pack")

// load loads a pack whose files read gives (by their path in the pack);
// where names it in errors.
func load(ctx context.Context, where string, read func(name string) ([]byte, error), engineVersion string, timeout time.Duration) (*Pack, error) {
	b, err := read("metadata.yaml")
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", where, err)
	}
	var m Metadata
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w %s: parse: %v", ErrParse, where+"/metadata.yaml", err)
	}
	if err := ValidateMetadata(&m); err != nil {
		return nil, err
	}
	if err := CheckConstraint(m.KubeAtlas, engineVersion); err != nil {
		return nil, fmt.Errorf("pack %s: %w", m.Name, err)
	}
	srcs := make([]SourceModule, len(m.Modules))
	for i, mod := range m.Modules {
		src, err := read(mod.File)
		if errors.Is(err, errOutside) {
			return nil, fmt.Errorf("%w: %s: modules[%d].file %q is outside the pack", ErrInvalidMetadata, m.Name, i, mod.File)
		}
		if err != nil {
			return nil, fmt.Errorf("pack %s: module %s: %w", m.Name, mod.Name, err)
		}
		srcs[i] = SourceModule{Name: mod.Name, Source: string(src), Entrypoint: mod.Entrypoint, Match: mod.Match}
	}
	return Register(ctx, m, srcs, timeout)
}

// Register compiles a pack's modules given by their sources (each with
// its entrypoint, compiled once); an error names the module
// (<pack>/<module>) and wraps rego.ErrCompile.
func Register(ctx context.Context, m Metadata, mods []SourceModule, timeout time.Duration) (*Pack, error) {
	p := &Pack{Metadata: m}
	for _, mod := range mods {
		key := m.Name + "/" + mod.Name
		prog, err := rego.Compile(ctx, mod.Entrypoint, timeout, rego.Module{File: key + ".rego", Source: mod.Source})
		if err != nil {
			return nil, fmt.Errorf("module %s: %w", key, err)
		}
		p.Modules = append(p.Modules, &Module{Key: key, Match: mod.Match, prog: prog,
			hash: hashOf(key, mod.Match.Group, mod.Match.Kind, mod.Entrypoint, mod.Source)})
	}
	return p, nil
}

// Edges are the graph's (package graph).
type (
	Edge = graph.Edge
	Ref  = graph.Ref
)

// Derive is the module's edges for input (a resource as a JSON tree).
func (m *Module) Derive(ctx context.Context, input any) ([]Edge, error) {
	out, err := m.prog.Eval(ctx, input)
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", m.Key, err)
	}
	edges, err := DecodeEdges(out)
	if err != nil {
		return nil, fmt.Errorf("module %s: %w", m.Key, err)
	}
	return edges, nil
}

// DecodeEdges reads a rule's output: a set of edges (or one edge); nil:
// none. Anything else is an error wrapping ErrShape.
func DecodeEdges(out any) ([]Edge, error) {
	var items []any
	switch x := out.(type) {
	case nil:
		return nil, nil
	case []any:
		items = x
	case map[string]any:
		items = []any{x}
	default:
		return nil, fmt.Errorf("%w: a %T", ErrShape, out)
	}
	edges := make([]Edge, 0, len(items))
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: element %d is a %T, not an edge", ErrShape, i, it)
		}
		e := Edge{}
		if e.Type, ok = m["type"].(string); !ok || e.Type == "" {
			return nil, fmt.Errorf("%w: element %d has no type", ErrShape, i)
		}
		for _, end := range []struct {
			name string
			ref  *Ref
		}{{"from", &e.From}, {"to", &e.To}} {
			r, ok := m[end.name].(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%w: element %d has no %s", ErrShape, i, end.name)
			}
			end.ref.Kind, _ = r["kind"].(string)
			end.ref.Namespace, _ = r["namespace"].(string)
			end.ref.Name, _ = r["name"].(string)
			if end.ref.Kind == "" || end.ref.Name == "" {
				return nil, fmt.Errorf("%w: element %d: %s needs kind and name", ErrShape, i, end.name)
			}
		}
		if a, ok := m["attributes"]; ok && a != nil {
			am, ok := a.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%w: element %d: attributes must be an object of strings", ErrShape, i)
			}
			attrs := make(map[string]string, len(am))
			for k, v := range am {
				s, ok := v.(string)
				if !ok {
					return nil, fmt.Errorf("%w: element %d: attribute %q is a %T, not a string", ErrShape, i, k, v)
				}
				attrs[k] = s
			}
			e.Attributes = graph.NewAttributes(attrs)
		}
		edges = append(edges, e)
	}
	if len(edges) > 1 {
		slices.SortFunc(edges, graph.Compare)
	}
	return edges, nil
}

// Router routes resources to the modules of the packs loaded.
type Router struct {
	exact    map[Match][]*Module
	catchAll []*Module
	hash     string
}

// NewRouter routes to the packs' modules, in pack and module order.
func NewRouter(packs ...*Pack) *Router {
	r := &Router{exact: map[Match][]*Module{}}
	var hashes []string
	for _, p := range packs {
		for _, m := range p.Modules {
			hashes = append(hashes, m.hash)
			if m.Match.catchAll() {
				r.catchAll = append(r.catchAll, m)
			} else {
				r.exact[m.Match] = append(r.exact[m.Match], m)
			}
		}
	}
	r.hash = hashOf(hashes...)
	return r
}

// NumModules is the number of modules routed (0 for a nil Router).
func (r *Router) NumModules() int {
	if r == nil {
		return 0
	}
	n := len(r.catchAll)
	for _, ms := range r.exact {
		n += len(ms)
	}
	return n
}

// Names reports whether a module names group and kind in its match (a
// catch-all does not).
func (r *Router) Names(group, kind string) bool {
	return len(r.exact[Match{Group: group, Kind: kind}]) > 0
}

// Route is the modules for a resource of group and kind: those matching
// exactly, then the catch-alls.
func (r *Router) Route(group, kind string) []*Module {
	exact := r.exact[Match{Group: group, Kind: kind}]
	if len(r.catchAll) == 0 {
		return exact
	}
	return append(append(make([]*Module, 0, len(exact)+len(r.catchAll)), exact...), r.catchAll...)
}

// GroupOf is the group of an apiVersion ("apps/v1": apps; "v1": "").
func GroupOf(apiVersion string) string {
	g, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return g
}

// Derive is every routed module's edges for a resource, in routing order.
// A module that fails is reported in errs; the others still derive.
func (r *Router) Derive(ctx context.Context, obj map[string]any) (edges []Edge, errs []error) {
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	for _, m := range r.Route(GroupOf(av), kind) {
		es, err := m.Derive(ctx, obj)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		edges = append(edges, es...)
	}
	return edges, errs
}

// SplitRef splits an OCI reference into repository and tag; the tag must
// be a semver (":latest" and a missing or empty tag are refused).
func SplitRef(ref string) (repository, tag string, err error) {
	ref = strings.TrimPrefix(ref, "oci://")
	slash := strings.LastIndex(ref, "/")
	colon := strings.LastIndex(ref, ":")
	if colon <= slash {
		return "", "", fmt.Errorf("%w %q: no tag (pin a semver tag)", ErrInvalidRef, ref)
	}
	repository, tag = ref[:colon], ref[colon+1:]
	switch {
	case repository == "" || tag == "":
		return "", "", fmt.Errorf("%w %q: empty repository or tag", ErrInvalidRef, ref)
	case tag == "latest":
		return "", "", fmt.Errorf("%w %q: :latest is refused (pin a semver tag, so that a registry change cannot change the rules loaded)", ErrInvalidRef, ref)
	}
	if _, err := semver.StrictNewVersion(strings.TrimPrefix(tag, "v")); err != nil {
		if _, err := semver.NewVersion(tag); err != nil {
			return "", "", fmt.Errorf("%w %q: the tag %q is not a semver", ErrInvalidRef, ref, tag)
		}
	}
	return repository, tag, nil
}
