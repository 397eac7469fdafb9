package gatekeeper

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	gkv1 "github.com/modwright/modwright/api/gatekeeper/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
)

// matcher is a compiled spec.match.
type matcher struct {
	kinds                []gkv1.Kinds
	scope                string
	namespaces, excluded []string
	labels, nsLabels     labels.Selector
	name                 string
	source               string
}

// compileMatch compiles m; errf names the field at fault.
func compileMatch(field string, m *gkv1.Match, errf errfFunc) *matcher {
	mt := &matcher{kinds: m.Kinds, scope: m.Scope, namespaces: m.Namespaces, excluded: m.ExcludedNamespaces, name: m.Name, source: m.Source}
	switch m.Scope {
	case "", "*", "Cluster", "Namespaced":
	default:
		errf(field+".scope", -1, "must be *, Cluster or Namespaced, not %q", m.Scope)
	}
	switch m.Source {
	case "", "All", "Generated", "Original":
	default:
		errf(field+".source", -1, "must be All, Generated or Original, not %q", m.Source)
	}
	sel := func(f string, ls *metav1.LabelSelector) labels.Selector {
		if ls == nil {
			return nil
		}
		s, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			errf(f, -1, "%v", err)
			return nil
		}
		return s
	}
	mt.labels = sel(field+".labelSelector", m.LabelSelector)
	mt.nsLabels = sel(field+".namespaceSelector", m.NamespaceSelector)
	for i, n := range m.Namespaces {
		checkGlob(fmt.Sprintf("%s.namespaces[%d]", field, i), n, errf)
	}
	for i, n := range m.ExcludedNamespaces {
		checkGlob(fmt.Sprintf("%s.excludedNamespaces[%d]", field, i), n, errf)
	}
	return mt
}

// globPattern is the pattern Gatekeeper's CRD gives namespace globs.
var globPattern = regexp.MustCompile(`^\*?[-:a-z0-9]*\*?$`)

// checkGlob: Gatekeeper's globs are names with a * at the start, the end
// or both.
func checkGlob(field, g string, errf errfFunc) {
	if !globPattern.MatchString(g) {
		errf(field, -1, "%q: must match %s (a name with a * at the start, the end or both)", g, globPattern)
	}
}

// glob matches s against Gatekeeper's glob g: contains (*x*), a suffix
// (*x), a prefix (x*) or the name itself.
func glob(g, s string) bool {
	pre, suf := strings.HasPrefix(g, "*"), strings.HasSuffix(g, "*")
	switch {
	case g == "*":
		return true
	case pre && suf:
		return strings.Contains(s, g[1:len(g)-1])
	case suf:
		return strings.HasPrefix(s, g[:len(g)-1])
	case pre:
		return strings.HasSuffix(s, g[1:])
	}
	return g == s
}

// globGenerateName: a prefix (x*) or contains (*x*) glob matches a
// generateName that begins with, or contains, x.
func globGenerateName(g, gen string) bool {
	if gen == "" || !strings.HasSuffix(g, "*") || g == "*" {
		return false
	}
	if strings.HasPrefix(g, "*") {
		return strings.Contains(gen, g[1:len(g)-1])
	}
	return strings.HasPrefix(gen, g[:len(g)-1])
}

// indexKinds are the kinds the match is pinned to (nil: any).
func (m *matcher) indexKinds() []string {
	if len(m.kinds) == 0 {
		return nil
	}
	var out []string
	for _, k := range m.kinds {
		if len(k.Kinds) == 0 || slices.Contains(k.Kinds, "*") {
			return nil
		}
		out = append(out, k.Kinds...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// target is what the match reads of the object under review.
type target struct {
	gvk       engine.GroupVersionKind
	name, gen string // metadata.name, metadata.generateName
	ns        string // the request's or the object's namespace; a Namespace's own name
	namespace bool   // the object is a Namespace
	labels    map[string]string
	generated bool
	nsObject  func() (map[string]any, error)
}

// errMissingNamespace: a namespaceSelector cannot be decided for a
// namespaced object whose Namespace is not known; Gatekeeper answers with
// a violation ("autoreject").
var errMissingNamespace = errors.New("namespace selector for namespace-scoped object but missing Namespace")

// matches is Gatekeeper's match, criteria in its order; an error is a
// namespace read that failed, or errMissingNamespace.
func (m *matcher) matches(t *target) (bool, error) {
	if len(m.kinds) > 0 && !slices.ContainsFunc(m.kinds, func(k gkv1.Kinds) bool {
		return (len(k.APIGroups) == 0 || slices.Contains(k.APIGroups, "*") || slices.Contains(k.APIGroups, t.gvk.Group)) &&
			(len(k.Kinds) == 0 || slices.Contains(k.Kinds, "*") || slices.Contains(k.Kinds, t.gvk.Kind))
	}) {
		return false, nil
	}
	var nsObj map[string]any
	if !t.namespace && t.ns != "" && (m.nsLabels != nil || m.scope != "") {
		var err error
		if nsObj, err = t.nsObject(); err != nil {
			return false, err
		}
	}
	hasNamespace := t.ns != "" || nsObj != nil
	switch m.scope {
	case "Cluster":
		if !t.namespace && hasNamespace {
			return false, nil
		}
	case "Namespaced":
		if t.namespace || !hasNamespace {
			return false, nil
		}
	}
	// Namespaces apply to namespaced objects and to Namespaces (their own
	// name); a cluster-scoped object is never excluded by them.
	if t.ns != "" {
		if len(m.namespaces) > 0 && !slices.ContainsFunc(m.namespaces, func(g string) bool { return glob(g, t.ns) }) {
			return false, nil
		}
		if slices.ContainsFunc(m.excluded, func(g string) bool { return glob(g, t.ns) }) {
			return false, nil
		}
	}
	if m.labels != nil && !m.labels.Matches(labels.Set(t.labels)) {
		return false, nil
	}
	if m.nsLabels != nil {
		switch {
		case t.namespace:
			if !m.nsLabels.Matches(labels.Set(t.labels)) {
				return false, nil
			}
		case t.ns != "":
			if nsObj == nil {
				return false, errMissingNamespace
			}
			if !m.nsLabels.Matches(labels.Set(stringMap(nsObj, "labels"))) {
				return false, nil
			}
		}
	}
	if m.name != "" && !glob(m.name, t.name) && !globGenerateName(m.name, t.gen) {
		return false, nil
	}
	switch m.source {
	case "Generated":
		if !t.generated {
			return false, nil
		}
	case "Original":
		if t.generated {
			return false, nil
		}
	}
	return true, nil
}

// stringMap is obj's metadata member of strings (labels, annotations).
func stringMap(obj map[string]any, member string) map[string]string {
	return kinds.MetadataStrings(obj, member)
}
