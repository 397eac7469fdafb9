package kyverno

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	kyvernov1 "github.com/modwright/modwright/api/kyverno/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/rules"
)

// matchSpec is a compiled match or exclude: any of any, all of all, or
// the single filter of the older form.
type matchSpec struct {
	any, all []*filter
	one      *filter
}

// filter is a compiled ResourceFilter: every field set must hold; a list
// holds when one of its entries does.
type filter struct {
	kinds       []kindSel
	name        string
	names       []string
	namespaces  []string
	annotations map[string]string
	selector    *metav1.LabelSelector // with wildcards in matchLabels: resolved per object
	sel         labels.Selector       // without: compiled once
	nsSel       labels.Selector
	ops         []rules.Operation
	roles       []string
	cRoles      []string
	subjects    []rbacv1.Subject
	noResource  bool // the resource description is empty
	noUser      bool // the user fields are empty
}

// kindSel is a parsed kind selector: group, version, kind, subresource,
// each possibly a wildcard.
type kindSel struct{ group, version, kind, sub string }

var reVersion = regexp.MustCompile(`^(v\d+((alpha|beta)\d+)?|\*)$`)

// parseKind parses Kyverno's kind selectors: Kind, version/Kind,
// group/version/Kind, Kind/subresource (or Kind.subresource),
// version/Kind/subresource, group/version/Kind/subresource, */*.
func parseKind(s string) kindSel {
	parts := strings.Split(s, "/")
	parts = append(parts[:len(parts)-1], strings.Split(parts[len(parts)-1], ".")...)
	switch len(parts) {
	case 1:
		return kindSel{"*", "*", parts[0], ""}
	case 2:
		switch {
		case parts[0] == "*" && parts[1] == "*":
			return kindSel{"*", "*", "*", "*"}
		case parts[0] == "*" && strings.ToLower(parts[1]) == parts[1]:
			return kindSel{"*", "*", "*", parts[1]}
		case reVersion.MatchString(parts[0]):
			return kindSel{"*", parts[0], parts[1], ""}
		}
		return kindSel{"*", "*", parts[0], parts[1]}
	case 3:
		if reVersion.MatchString(parts[0]) {
			return kindSel{"*", parts[0], parts[1], parts[2]}
		}
		return kindSel{parts[0], parts[1], parts[2], ""}
	case 4:
		return kindSel{parts[0], parts[1], parts[2], parts[3]}
	}
	return kindSel{}
}

func (k kindSel) matches(gvk engine.GroupVersionKind, sub string) bool {
	if !lang.MatchWildcard(k.group, gvk.Group) || !lang.MatchWildcard(k.version, gvk.Version) || !lang.MatchWildcard(k.kind, gvk.Kind) {
		return false
	}
	if lang.MatchWildcard(k.sub, sub) {
		return true
	}
	// An ephemeral container is added through a subresource of the Pod.
	return sub == "ephemeralcontainers" && gvk.Group == "" && gvk.Kind == "Pod"
}

func (c *compiler) matchSpec(field string, m *kyvernov1.MatchResources) matchSpec {
	var ms matchSpec
	switch {
	case len(m.Any) > 0 && len(m.All) > 0:
		c.errf(field, "any and all cannot be used together")
	case len(m.Any) > 0:
		for i := range m.Any {
			ms.any = append(ms.any, c.filter(fmt.Sprintf("%s.any[%d]", field, i), &m.Any[i].UserInfo, &m.Any[i].ResourceDescription))
		}
	case len(m.All) > 0:
		for i := range m.All {
			ms.all = append(ms.all, c.filter(fmt.Sprintf("%s.all[%d]", field, i), &m.All[i].UserInfo, &m.All[i].ResourceDescription))
		}
	default:
		ms.one = c.filter(field, &m.UserInfo, &m.ResourceDescription)
	}
	return ms
}

func (c *compiler) filter(field string, u *kyvernov1.UserInfo, rd *kyvernov1.ResourceDescription) *filter {
	f := &filter{name: rd.Name, names: rd.Names, namespaces: rd.Namespaces, annotations: rd.Annotations,
		roles: u.Roles, cRoles: u.ClusterRoles, subjects: u.Subjects}
	if rd.Name != "" && len(rd.Names) > 0 {
		c.errf(field+".resources", "name and names cannot be used together")
	}
	for _, k := range rd.Kinds {
		ks := parseKind(k)
		if ks.kind == "" {
			c.errf(field+".resources.kinds", "%q is not a kind selector", k)
			continue
		}
		f.kinds = append(f.kinds, ks)
	}
	for i, op := range rd.Operations {
		switch o := rules.Operation(op); o {
		case rules.Create, rules.Update, rules.Delete, rules.Connect:
			f.ops = append(f.ops, o)
		default:
			c.errf(fmt.Sprintf("%s.resources.operations[%d]", field, i), "must be CREATE, UPDATE, DELETE or CONNECT, not %q", op)
		}
	}
	if rd.Selector != nil {
		if hasWildcardLabels(rd.Selector) {
			f.selector = rd.Selector
		} else if sel, err := selectorOf(rd.Selector); err != nil {
			c.errf(field+".resources.selector", "%v", err)
		} else {
			f.sel = sel
		}
	}
	if rd.NamespaceSelector != nil {
		sel, err := selectorOf(rd.NamespaceSelector)
		if err != nil {
			c.errf(field+".resources.namespaceSelector", "%v", err)
		} else {
			f.nsSel = sel
		}
	}
	f.noResource = len(rd.Kinds) == 0 && rd.Name == "" && len(rd.Names) == 0 && len(rd.Namespaces) == 0 &&
		len(rd.Annotations) == 0 && rd.Selector == nil && rd.NamespaceSelector == nil && len(rd.Operations) == 0
	f.noUser = len(u.Roles) == 0 && len(u.ClusterRoles) == 0 && len(u.Subjects) == 0
	return f
}

func selectorOf(ls *metav1.LabelSelector) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(ls)
}

func hasWildcardLabels(ls *metav1.LabelSelector) bool {
	for k, v := range ls.MatchLabels {
		if strings.ContainsAny(k, "*?") || strings.ContainsAny(v, "*?") {
			return true
		}
	}
	return false
}

// footprint is what the index needs: the operations the rule may match
// and its kinds (any: a wildcard kind or none given).
func (ms *matchSpec) footprint() (ops engine.OpSet, ks []string, any bool) {
	fs := append(append(slices.Clone(ms.any), ms.all...), ms.one)
	for _, f := range fs {
		if f == nil {
			continue
		}
		if len(f.ops) == 0 {
			ops |= engine.OpSetOf(rules.Create, rules.Update, rules.Delete, rules.Connect)
		} else {
			ops |= engine.OpSetOf(f.ops...)
		}
		if len(f.kinds) == 0 {
			any = true
		}
		for _, k := range f.kinds {
			if strings.ContainsAny(k.kind, "*?") {
				any = true
			}
			ks = append(ks, k.kind)
		}
	}
	return ops, ks, any
}

// target is what matching reads of a request.
type target struct {
	gvk         engine.GroupVersionKind
	sub         string
	op          rules.Operation
	name        string
	ns          string // a Namespace's own name for a Namespace
	labels      map[string]string
	annotations map[string]string
	user        engine.UserInfo
	nsLabels    func() (map[string]string, error)
	roles       func() (roles, clusterRoles []string, err error)
}

// matches is Kyverno's match: any, all, or the one filter; an error is a
// read that failed (namespace labels, roles).
func (ms *matchSpec) matches(t *target) (bool, error) {
	switch {
	case len(ms.any) > 0:
		for _, f := range ms.any {
			if ok, err := f.matches(t, true); ok || err != nil {
				return ok, err
			}
		}
		return false, nil
	case len(ms.all) > 0:
		for _, f := range ms.all {
			if ok, err := f.matches(t, true); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	case ms.one != nil:
		return ms.one.matches(t, true)
	}
	return false, nil
}

// excludes is Kyverno's exclude: an empty filter never excludes; with
// all, every filter must exclude.
func (ms *matchSpec) excludes(t *target) (bool, error) {
	check := func(f *filter) (bool, error) {
		if f.noResource && f.noUser {
			return false, nil
		}
		return f.matches(t, false)
	}
	switch {
	case len(ms.any) > 0:
		for _, f := range ms.any {
			if ok, err := check(f); ok || err != nil {
				return ok, err
			}
		}
		return false, nil
	case len(ms.all) > 0:
		for _, f := range ms.all {
			if ok, err := check(f); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	case ms.one != nil:
		return check(ms.one)
	}
	return false, nil
}

// matches checks every field the filter sets. In a match, a request with
// no user (offline) ignores the user fields, as Kyverno's background scan.
func (f *filter) matches(t *target, inMatch bool) (bool, error) {
	noUser := f.noUser
	if inMatch && t.user.Username == "" && len(t.user.Groups) == 0 {
		noUser = true
	}
	if inMatch && f.noResource && noUser {
		return false, nil // match cannot be empty
	}
	if len(f.ops) > 0 && !slices.Contains(f.ops, t.op) {
		return false, nil
	}
	if len(f.kinds) > 0 && !slices.ContainsFunc(f.kinds, func(k kindSel) bool { return k.matches(t.gvk, t.sub) }) {
		return false, nil
	}
	if f.name != "" && !lang.MatchWildcard(f.name, t.name) {
		return false, nil
	}
	if len(f.names) > 0 && !slices.ContainsFunc(f.names, func(n string) bool { return lang.MatchWildcard(n, t.name) }) {
		return false, nil
	}
	if len(f.namespaces) > 0 && !slices.ContainsFunc(f.namespaces, func(n string) bool { return lang.MatchWildcard(n, t.ns) }) {
		return false, nil
	}
	for k, v := range f.annotations {
		found := false
		for ak, av := range t.annotations {
			if lang.MatchWildcard(k, ak) && lang.MatchWildcard(v, av) {
				found = true
				break
			}
		}
		if !found {
			return false, nil
		}
	}
	if f.sel != nil && !f.sel.Matches(labels.Set(t.labels)) {
		return false, nil
	}
	if f.selector != nil {
		sel, err := selectorOf(expandSelector(f.selector, t.labels))
		if err != nil || !sel.Matches(labels.Set(t.labels)) {
			return false, nil
		}
	}
	if f.nsSel != nil {
		if t.gvk.Kind == "Namespace" && t.gvk.Group == "" {
			return false, nil // not applicable to a Namespace
		}
		ls, err := t.nsLabels()
		if err != nil {
			return false, err
		}
		if !f.nsSel.Matches(labels.Set(ls)) {
			return false, nil
		}
	}
	if noUser {
		return true, nil
	}
	if len(f.roles) > 0 || len(f.cRoles) > 0 {
		rs, crs, err := t.roles()
		if err != nil {
			return false, err
		}
		if len(f.roles) > 0 && !intersects(f.roles, rs) {
			return false, nil
		}
		if len(f.cRoles) > 0 && !intersects(f.cRoles, crs) {
			return false, nil
		}
	}
	if len(f.subjects) > 0 && !slices.ContainsFunc(f.subjects, func(s rbacv1.Subject) bool { return subjectMatches(s, t.user) }) {
		return false, nil
	}
	return true, nil
}

func intersects(a, b []string) bool {
	return slices.ContainsFunc(a, func(s string) bool { return slices.Contains(b, s) })
}

func subjectMatches(s rbacv1.Subject, u engine.UserInfo) bool {
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		return lang.MatchWildcard("system:serviceaccount:"+s.Namespace+":"+s.Name, u.Username)
	case rbacv1.GroupKind:
		return slices.ContainsFunc(u.Groups, func(g string) bool { return lang.MatchWildcard(s.Name, g) })
	case rbacv1.UserKind:
		return lang.MatchWildcard(s.Name, u.Username)
	}
	return false
}

// expandSelector replaces the wildcard keys and values of matchLabels by
// the first label (in sorted order) matching both, or their wildcards by
// "0" when none does, as Kyverno does.
func expandSelector(ls *metav1.LabelSelector, objLabels map[string]string) *metav1.LabelSelector {
	out := ls.DeepCopy()
	out.MatchLabels = map[string]string{}
	keys := make([]string, 0, len(objLabels))
	for k := range objLabels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	zero := strings.NewReplacer("*", "0", "?", "0")
	for k, v := range ls.MatchLabels {
		if !strings.ContainsAny(k, "*?") && !strings.ContainsAny(v, "*?") {
			out.MatchLabels[k] = v
			continue
		}
		nk, nv := zero.Replace(k), zero.Replace(v)
		for _, ok := range keys {
			if lang.MatchWildcard(k, ok) && lang.MatchWildcard(v, objLabels[ok]) {
				nk, nv = ok, objLabels[ok]
				break
			}
		}
		out.MatchLabels[nk] = nv
	}
	return out
}
