package kinitiras

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/modwright/modwright/api/kinitiras/v1alpha1"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/parser"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/modwright/modwright/internal/rules"
)

// The template types and sources, as kinitiras spells them.
const (
	TypeAnnotations       = "annotations"
	TypeLabels            = "labels"
	TypeResources         = "resources"
	TypeResourcesOversell = "resourcesOversell"
	TypeTolerations       = "tolerations"
	TypeAffinity          = "affinity"
	TypeCondition         = "condition"

	FromCurrent = "current"
	FromOld     = "old"
	FromK8s     = "k8s"
	FromOwner   = "owner"
	FromHTTP    = "http"
)

// The template types are kinitiras' (api/kinitiras/v1alpha1).
type (
	OverrideTemplate  = v1alpha1.OverrideRuleTemplate
	ResourcesOversell = v1alpha1.ResourcesOversellRule
	ConstantValue     = v1alpha1.ConstantValue
	ResourceRef       = v1alpha1.ResourceRefer
	HTTPRef           = v1alpha1.HttpDataRef
	HTTPAuth          = v1alpha1.HttpRequestAuth
	ValidateTemplate  = v1alpha1.ValidateRuleTemplate
	Condition         = v1alpha1.ValidateCondition
	ValueProcess      = v1alpha1.ValueProcess
)

// problems collects a template's field errors.
type problems struct {
	field string
	errs  []rules.FieldError
}

func (p *problems) add(field, format string, args ...any) {
	p.errs = append(p.errs, rules.FieldError{Field: p.field + field, Pos: -1, Msg: fmt.Sprintf(format, args...)})
}

// cueWriter builds a rendered program: declarations, then the list of
// patch groups (flattened) or the validate struct.
type cueWriter struct {
	imports []string
	decls   []string
}

func (w *cueWriter) use(pkg string) {
	if !slices.Contains(w.imports, pkg) {
		w.imports = append(w.imports, pkg)
	}
}

func (w *cueWriter) decl(format string, args ...any) {
	w.decls = append(w.decls, fmt.Sprintf(format, args...))
}

// source formats the program (the rendered CUE a policy stores).
func (w *cueWriter) source() (string, error) {
	var b strings.Builder
	if len(w.imports) > 0 {
		b.WriteString("import (\n")
		for _, i := range w.imports {
			fmt.Fprintf(&b, "\t%q\n", i)
		}
		b.WriteString(")\n\n")
	}
	for _, d := range w.decls {
		b.WriteString(d)
		b.WriteString("\n")
	}
	out, err := format.Source([]byte(b.String()), format.UseSpaces(4), format.TabIndent(false))
	if err != nil {
		return "", fmt.Errorf("rendering the template: %w (please report: %s)", err, b.String())
	}
	return string(out), nil
}

// finish is the program's text, or the template's problems.
func (w *cueWriter) finish(p *problems) (string, []rules.FieldError) {
	if len(p.errs) > 0 {
		return "", p.errs
	}
	src, err := w.source()
	if err != nil {
		p.add("", "%v", err)
		return "", p.errs
	}
	return src, nil
}

// q quotes a CUE string.
func q(s string) string { return literal.String.Quote(s) }

// sel selects keys of a CUE reference (quoted labels).
func sel(base string, keys ...string) string {
	for _, k := range keys {
		base += "." + q(k)
	}
	return base
}

// ptr is a JSON pointer of the segments, escaped.
func ptr(segs ...string) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString("/")
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s))
	}
	return b.String()
}

// patch is one JSON-patch operation; path is a CUE string expression,
// value a CUE expression ("" for none).
func patchOp(op, path, value string) string {
	if value == "" {
		return fmt.Sprintf("{op: %s, path: %s}", q(op), path)
	}
	return fmt.Sprintf("{op: %s, path: %s, value: %s}", q(op), path, value)
}

// group is a list of elements (patches or groups), flattened at the end.
func group(elems ...string) string {
	if len(elems) == 0 {
		return "[]"
	}
	return "[\n" + strings.Join(elems, ",\n") + ",\n]"
}

// guard is a group present only when cond holds.
func guard(cond string, elems ...string) string {
	return "if " + cond + " {" + group(elems...) + "}"
}

// jsonValue is v as JSON (valid CUE).
func jsonValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "_|_"
	}
	return string(b)
}

// refKey is the name a reference's source has in the program, as
// kinitiras names it (suffix "_d" for a validate dataRef).
func refKey(from v1alpha1.ValueRefFrom, suffix string) string {
	switch from {
	case FromCurrent:
		return "object"
	case FromOld:
		return "oldObject"
	case FromK8s, FromOwner:
		return "otherObject" + suffix
	case FromHTTP:
		return "http" + suffix
	}
	return ""
}

// external reports whether a source is resolved outside the object (it
// arrives in data.extraParams).
func external(from v1alpha1.ValueRefFrom) bool {
	return from == FromK8s || from == FromOwner || from == FromHTTP
}

// refExpr is the CUE reference of a ResourceRef: a path with slashes
// (/metadata/labels/app) is selected segment by segment (numbers index
// lists); a dotted path (metadata.labels.app) is CUE selector text, as
// kinitiras reads it.
func refExpr(p *problems, field string, r *ResourceRef, suffix string) string {
	key := refKey(r.From, suffix)
	if key == "" {
		p.add(field+".from", "unknown source %q (current, old, k8s, owner or http)", r.From)
		return ""
	}
	if r.Path == "" {
		p.add(field+".path", "a path is required")
		return ""
	}
	if r.From == FromK8s && r.K8s == nil {
		p.add(field+".k8s", "from k8s needs k8s (the object's selector)")
	}
	if r.From == FromHTTP && (r.Http == nil || r.Http.URL == "") {
		p.add(field+".http.url", "from http needs http.url")
	}
	segments := func(sep string) string {
		e := key
		for _, s := range strings.Split(strings.Trim(r.Path, sep), sep) {
			if _, err := strconv.Atoi(s); err == nil && s != "" && s[0] != '-' && s[0] != '+' {
				e += "[" + s + "]"
			} else {
				e += "." + q(s)
			}
		}
		return e
	}
	if strings.Contains(r.Path, "/") {
		return segments("/")
	}
	// A dotted path is CUE selector text, as kinitiras reads it
	// (metadata.annotations."a.b"); one that is not (a key with a dash:
	// metadata.labels.pod-template-hash) is split at its dots.
	e := key + "." + r.Path
	if x, err := parser.ParseExpr("path", e); err == nil && isPath(x) {
		return e
	}
	if strings.ContainsAny(r.Path, `"[]()\ `) {
		p.add(field+".path", "%q is not a path (a.b.c or /a/b/c)", r.Path)
		return ""
	}
	return segments(".")
}

// isPath reports whether e is a reference with constant selectors and
// indexes.
func isPath(e ast.Expr) bool {
	for {
		switch x := e.(type) {
		case *ast.Ident:
			return true
		case *ast.SelectorExpr:
			e = x.X
		case *ast.IndexExpr:
			if _, ok := x.Index.(*ast.BasicLit); !ok {
				return false
			}
			e = x.X
		default:
			return false
		}
	}
}

// header declares data and its names, and the external sources.
func header(w *cueWriter, withKind bool, refs ...string) {
	w.decl("data: _ @tag(data)")
	w.decl("object: data.object")
	if withKind {
		w.decl("kind: object.kind")
	}
	w.decl("oldObject: data.oldObject")
	for _, k := range refs {
		if k != "" {
			w.decl("%s: data.extraParams.%s", k, q(k))
		}
	}
}

// constStr is a constant as kinitiras writes it into a string ("{{.Value}}"):
// Go's formatting of the value.
func constStr(c *ConstantValue) (string, bool) {
	switch {
	case c.String != nil:
		return *c.String, true
	case c.Integer != nil:
		return strconv.FormatInt(*c.Integer, 10), true
	case c.Float != nil:
		return string(*c.Float), true
	case c.Boolean != nil:
		return strconv.FormatBool(*c.Boolean), true
	case len(c.StringSlice) > 0:
		return fmt.Sprint(c.StringSlice), true
	case len(c.IntegerSlice) > 0:
		return fmt.Sprint(c.IntegerSlice), true
	case len(c.FloatSlice) > 0:
		return fmt.Sprint(c.FloatSlice), true
	}
	return "", false
}

// constCUE is a constant as a CUE value; list reports whether it is a list.
func constCUE(c *ConstantValue, p *problems, field string) (v string, list bool) {
	num := func(s string) string {
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			p.add(field, "%q is not a number", s)
			return "0"
		}
		return s
	}
	switch {
	case c.String != nil:
		return q(*c.String), false
	case c.Integer != nil:
		return strconv.FormatInt(*c.Integer, 10), false
	case c.Float != nil:
		return num(string(*c.Float)), false
	case c.Boolean != nil:
		return strconv.FormatBool(*c.Boolean), false
	case len(c.StringSlice) > 0:
		var es []string
		for _, s := range c.StringSlice {
			es = append(es, q(s))
		}
		return "[" + strings.Join(es, ", ") + "]", true
	case len(c.IntegerSlice) > 0:
		return jsonValue(c.IntegerSlice), true
	case len(c.FloatSlice) > 0:
		var es []string
		for _, s := range c.FloatSlice {
			es = append(es, num(string(s)))
		}
		return "[" + strings.Join(es, ", ") + "]", true
	case len(c.StringMap) > 0:
		p.add(field, "a stringMap cannot be compared")
		return "{}", false
	}
	p.add(field, "the value sets none of string, integer, float, boolean, stringSlice, integerSlice, floatSlice, stringMap")
	return "_", false
}

var operations = []string{"add", "remove", "replace"}

// RenderOverride renders an override template to CUE: the program
// kinitiras' interrupter stores as renderedCue. It reads data (object,
// oldObject, extraParams) and gives patches. field names the template in
// errors.
func RenderOverride(t *OverrideTemplate, field string) (string, []rules.FieldError) {
	p := &problems{field: field}
	w := &cueWriter{}
	w.use("list")
	op := string(t.Operation)
	if !slices.Contains(operations, op) {
		p.add(".operation", "operation %q is not one of add, remove, replace", op)
	}
	var ref, refDecl string
	if t.ValueRef != nil && (t.Type == TypeAnnotations || t.Type == TypeLabels) && t.Value == nil {
		ref = refExpr(p, ".valueRef", t.ValueRef, "")
		if external(t.ValueRef.From) {
			refDecl = refKey(t.ValueRef.From, "")
		}
	}
	header(w, true, refDecl)
	var elems []string
	switch t.Type {
	case TypeAnnotations, TypeLabels:
		elems = metadataPatches(p, t, op, ref)
	case TypeResources:
		elems = append(ensureResources(), resourcePatches(t.Resources, op)...)
	case TypeResourcesOversell:
		elems = append(ensureResources(), oversellPatches(p, w, t.ResourcesOversell, op)...)
	case TypeTolerations:
		elems = tolerationPatches(t.Tolerations, op)
	case TypeAffinity:
		elems = affinityPatches(t.Affinity, op)
	default:
		p.add(".type", "type %q is not one of annotations, labels, resources, resourcesOversell, tolerations, affinity", t.Type)
	}
	w.decl("_patches: %s", group(elems...))
	w.decl("patches: list.FlattenN(_patches, -1)")
	return w.finish(p)
}

// metadataPatches: annotations or labels (the map made first when
// absent), each key added, replaced or removed.
func metadataPatches(p *problems, t *OverrideTemplate, op, ref string) []string {
	m := string(t.Type)
	base := "object.metadata." + m
	elems := []string{guard(base+" == _|_", patchOp("replace", q(ptr("metadata", m)), "{}"))}
	switch {
	case op == "remove":
		if t.Path == "" {
			p.add(".path", "the key to remove is required")
		}
		elems = append(elems, guard(sel(base, t.Path)+" != _|_", patchOp(op, q(ptr("metadata", m, t.Path)), "")))
	case t.Value != nil:
		if len(t.Value.StringMap) > 0 && t.Value.String == nil && t.Value.Integer == nil && t.Value.Float == nil && t.Value.Boolean == nil &&
			len(t.Value.StringSlice)+len(t.Value.IntegerSlice)+len(t.Value.FloatSlice) == 0 {
			keys := make([]string, 0, len(t.Value.StringMap))
			for k := range t.Value.StringMap {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				elems = append(elems, patchOp(op, q(ptr("metadata", m, k)), q(t.Value.StringMap[k])))
			}
			break
		}
		s, ok := constStr(t.Value)
		if !ok {
			p.add(".value", "the value sets none of string, integer, float, boolean, stringSlice, integerSlice, floatSlice, stringMap")
		}
		if t.Path == "" {
			p.add(".path", "the key is required")
		}
		elems = append(elems, patchOp(op, q(ptr("metadata", m, t.Path)), q(s)))
	case ref != "":
		if t.Path == "" {
			p.add(".path", "the key is required")
		}
		elems = append(elems, guard(ref+" != _|_", patchOp(op, q(ptr("metadata", m, t.Path)), ref)))
	}
	return elems
}

// container is where a kind keeps its first container: a Pod's spec, or
// a workload's pod template.
type container struct{ cond, sel, ptr string }

var containers = []container{
	{`kind == "Pod"`, "object.spec.containers[0]", "/spec/containers/0"},
	{`kind != "Pod"`, "object.spec.template.spec.containers[0]", "/spec/template/spec/containers/0"},
}

// perContainer is gen's group for a Pod and for a workload.
func perContainer(gen func(c container) []string) []string {
	var out []string
	for _, c := range containers {
		out = append(out, guard(c.cond, gen(c)...))
	}
	return out
}

// ensureResources makes the first container's resources, requests and
// limits when absent.
func ensureResources() []string {
	return perContainer(func(c container) []string {
		var out []string
		for _, f := range []string{"resources", "resources.requests", "resources.limits"} {
			out = append(out, guard(c.sel+"."+f+" == _|_", patchOp("replace", q(c.ptr+"/"+strings.ReplaceAll(f, ".", "/")), "{}")))
		}
		return out
	})
}

// quantity is a quantity as kinitiras writes it (its integer value), or,
// where that loses the fraction (500m), the quantity itself.
func quantity(v resource.Quantity) string {
	if v.MilliValue()%1000 == 0 {
		return strconv.FormatInt(v.Value(), 10)
	}
	return v.String()
}

func resourcePatches(r *corev1.ResourceRequirements, op string) []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, part := range []struct {
		name string
		list corev1.ResourceList
	}{{"requests", r.Requests}, {"limits", r.Limits}} {
		keys := make([]string, 0, len(part.list))
		for k := range part.list {
			keys = append(keys, string(k))
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = append(out, perContainer(func(c container) []string {
				path := q(c.ptr + ptr("resources", part.name, k))
				if op == "remove" {
					return []string{guard(sel(c.sel+".resources."+part.name, k)+" != _|_", patchOp("remove", path, ""))}
				}
				return []string{patchOp("replace", path, q(quantity(part.list[corev1.ResourceName(k)])))}
			})...)
		}
	}
	return out
}

// validFactor is kinitiras' test of a factor: a number strictly between
// 0 and 1.
func validFactor(s string) bool {
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && f > 0 && f < 1
}

// unitsDecl declares the binary and decimal units of a quantity.
const unitsDecl = `_units: {Ki: 1024, Mi: 1024 * 1024, Gi: 1024 * 1024 * 1024, Ti: 1024 * 1024 * 1024 * 1024, K: 1000, M: 1000 * 1000, G: 1000 * 1000 * 1000, T: 1000 * 1000 * 1000 * 1000}`

// oversellPatches sets the first container's requests to its limits
// times each factor, as kinitiras computes them (cpu in millicores,
// memory and ephemeral storage in bytes).
func oversellPatches(p *problems, w *cueWriter, o *ResourcesOversell, op string) []string {
	if o == nil || !validFactor(string(o.CpuFactor)) && !validFactor(string(o.MemoryFactor)) && !validFactor(string(o.DiskFactor)) {
		return nil // kinitiras: no factor in (0, 1), nothing to do
	}
	for _, f := range []struct{ name, v string }{{"cpuFactor", string(o.CpuFactor)}, {"memoryFactor", string(o.MemoryFactor)}, {"diskFactor", string(o.DiskFactor)}} {
		if _, err := strconv.ParseFloat(f.v, 64); f.v != "" && err != nil {
			p.add(".resourcesOversell."+f.name, "%q is not a number", f.v)
		}
	}
	if len(p.errs) > 0 {
		return nil
	}
	w.use("strings")
	w.use("strconv")
	w.use("math")
	w.decl("_resources: {}")
	for _, c := range containers {
		w.decl("if %s {_resources: %s.resources}", c.cond, c.sel)
	}
	w.decl("_limits: {}\n_requests: {}")
	w.decl("if _resources.limits != _|_ {_limits: _resources.limits}")
	w.decl("if _resources.requests != _|_ {_requests: _resources.requests}")
	w.decl("%s", unitsDecl)
	var out []string
	remove := func(key string, extra string) []string {
		return perContainer(func(c container) []string {
			g := guard(sel(c.sel+".resources.requests", key)+" != _|_", patchOp("remove", q(c.ptr+"/resources/requests/"+key), ""))
			if extra != "" {
				g = guard(extra, g)
			}
			return []string{g}
		})
	}
	replace := func(key, value, extra string) []string {
		return perContainer(func(c container) []string {
			pt := patchOp("replace", q(c.ptr+"/resources/requests/"+key), value)
			if extra != "" {
				return []string{guard(extra, pt)}
			}
			return []string{pt}
		})
	}
	if o.CpuFactor != "" {
		w.decl(`_cpuFactor: %s
_cpuZeroRequest: *false | bool
if _requests.cpu != _|_ if _requests.cpu == "0" {_cpuZeroRequest: true}
_cpu: *0 | number
if _limits.cpu != _|_ {
	if !_cpuZeroRequest {
		if strings.HasSuffix(_limits.cpu, "m") {_cpu: strconv.Atoi(strings.TrimSuffix(_limits.cpu, "m")) * 0.001 * _cpuFactor}
		if !strings.HasSuffix(_limits.cpu, "m") {_cpu: strconv.Atoi(_limits.cpu) * _cpuFactor}
	}
	if _cpuZeroRequest {_cpu: 0.0}
}`, o.CpuFactor)
		if op == "remove" {
			out = append(out, remove("cpu", "")...)
		} else {
			out = append(out, replace("cpu", `strconv.FormatInt(math.Round(_cpu * 1000), 10) + "m"`, "")...)
		}
	}
	if o.MemoryFactor != "" {
		w.decl(`_memoryFactor: %s
_memoryUnit: *false | bool
if _limits.memory != _|_ {_memoryUnit: _limits.memory !~ "^[0-9]*$"}
_memory: *0 | number
if _memoryUnit {
	for u, m in _units if strings.HasSuffix(_limits.memory, u) {_memory: strconv.Atoi(strings.TrimSuffix(_limits.memory, u)) * m * _memoryFactor}
}
if !_memoryUnit {_memory: strconv.Atoi(_limits.memory) * _memoryFactor}`, o.MemoryFactor)
		if op == "remove" {
			out = append(out, remove("memory", "")...)
		} else {
			out = append(out, replace("memory", "math.Round(_memory)", "")...)
		}
	}
	if o.DiskFactor != "" {
		w.decl(`_diskFactor: %s
_diskZero: bool
_diskUnit: *false | bool
if _limits."ephemeral-storage" == _|_ {_diskZero: true}
if _limits."ephemeral-storage" != _|_ {
	_diskUnit: _limits."ephemeral-storage" !~ "^[0-9]*$"
	if _limits."ephemeral-storage" != "0" && _limits."ephemeral-storage" != "" {_diskZero: false}
}
_disk: *0 | number
if !_diskZero {
	if _diskUnit {
		for u, m in _units if strings.HasSuffix(_limits."ephemeral-storage", u) {_disk: strconv.Atoi(strings.TrimSuffix(_limits."ephemeral-storage", u)) * m * _diskFactor}
	}
	if !_diskUnit {_disk: strconv.Atoi(_limits."ephemeral-storage") * _diskFactor}
}`, o.DiskFactor)
		if op == "remove" {
			out = append(out, remove("ephemeral-storage", "!_diskZero")...)
		} else {
			out = append(out, replace("ephemeral-storage", "math.Round(_disk)", "!_diskZero")...)
		}
	}
	return out
}

// tolerationPatches: the tolerations set when the pod has none; else
// each added first, or the pod's matching ones (same key, and value for
// Equal) replaced or removed.
func tolerationPatches(ts []*corev1.Toleration, op string) []string {
	if len(ts) == 0 {
		return nil
	}
	const base = "object.spec.tolerations"
	var out []string
	if op != "remove" {
		set := patchOp("replace", q("/spec/tolerations"), jsonValue(ts))
		out = append(out, guard(base+" == _|_", set), guard(base+" != _|_ if len("+base+") == 0", set))
	}
	var each []string
	for _, t := range ts {
		if t == nil {
			continue
		}
		if op == "add" {
			each = append(each, patchOp("add", q("/spec/tolerations/0"), jsonValue(t)))
			continue
		}
		val := ""
		if op == "replace" {
			val = jsonValue(t)
		}
		cond := "t.key != _|_ if t.key == " + q(t.Key)
		switch t.Operator {
		case corev1.TolerationOpExists:
		case corev1.TolerationOpEqual:
			cond += " if t.value != _|_ if t.value == " + q(t.Value)
		default:
			continue // kinitiras matches Exists and Equal only
		}
		each = append(each, "for i, t in "+base+" "+guard(cond, patchOp(op, `"/spec/tolerations/\(i)"`, val)))
	}
	if len(each) > 0 {
		out = append(out, guard(base+" != _|_ if len("+base+") > 0", each...))
	}
	return out
}

// affinityPatches: the affinity (or each of its parts) set when absent;
// else its terms replaced or removed, or added first.
func affinityPatches(a *corev1.Affinity, op string) []string {
	if a == nil || !validAffinity(a) {
		return nil
	}
	const base, bptr = "object.spec.affinity", "/spec/affinity"
	var out []string
	if op != "remove" {
		out = append(out, guard(base+" == _|_", patchOp("replace", q(bptr), jsonValue(a))))
	}
	type field struct {
		name  string
		set   bool
		value any
		items []any // added one by one (at index 0), in order
		terms bool  // a node selector: its terms are the list
	}
	type section struct {
		name   string
		value  any
		fields []field
	}
	var secs []section
	if n := a.NodeAffinity; n != nil {
		var req, pref []any
		if n.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			for _, t := range n.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				req = append(req, t)
			}
		}
		for _, t := range n.PreferredDuringSchedulingIgnoredDuringExecution {
			pref = append(pref, t)
		}
		secs = append(secs, section{"nodeAffinity", n, []field{
			{"requiredDuringSchedulingIgnoredDuringExecution", n.RequiredDuringSchedulingIgnoredDuringExecution != nil, n.RequiredDuringSchedulingIgnoredDuringExecution, req, true},
			{"preferredDuringSchedulingIgnoredDuringExecution", len(pref) > 0, n.PreferredDuringSchedulingIgnoredDuringExecution, pref, false},
		}})
	}
	podTerms := func(name string, v any, req []corev1.PodAffinityTerm, pref []corev1.WeightedPodAffinityTerm) section {
		var r, p []any
		for _, t := range req {
			r = append(r, t)
		}
		for _, t := range pref {
			p = append(p, t)
		}
		return section{name, v, []field{
			{"requiredDuringSchedulingIgnoredDuringExecution", len(r) > 0, req, r, false},
			{"preferredDuringSchedulingIgnoredDuringExecution", len(p) > 0, pref, p, false},
		}}
	}
	if x := a.PodAffinity; x != nil {
		secs = append(secs, podTerms("podAffinity", x, x.RequiredDuringSchedulingIgnoredDuringExecution, x.PreferredDuringSchedulingIgnoredDuringExecution))
	}
	if x := a.PodAntiAffinity; x != nil {
		secs = append(secs, podTerms("podAntiAffinity", x, x.RequiredDuringSchedulingIgnoredDuringExecution, x.PreferredDuringSchedulingIgnoredDuringExecution))
	}
	var inner []string
	for _, s := range secs {
		sb, sp := base+"."+s.name, bptr+"/"+s.name
		if op != "remove" {
			inner = append(inner, guard(sb+" == _|_", patchOp("replace", q(sp), jsonValue(s.value))))
		}
		var sub []string
		for _, f := range s.fields {
			if !f.set {
				continue
			}
			fb, fp := sb+"."+f.name, sp+"/"+f.name
			switch op {
			case "replace":
				sub = append(sub, patchOp(op, q(fp), jsonValue(f.value)))
				continue
			case "remove":
				sub = append(sub, patchOp(op, q(fp), ""))
				continue
			}
			sub = append(sub, guard(fb+" == _|_", patchOp("replace", q(fp), jsonValue(f.value))))
			list, lp, lv := fb, fp, jsonValue(f.value)
			if f.terms {
				if len(f.items) == 0 {
					continue
				}
				list, lp, lv = fb+".nodeSelectorTerms", fp+"/nodeSelectorTerms", jsonValue(f.items)
			}
			var adds []string
			for _, it := range f.items {
				adds = append(adds, patchOp("add", q(lp+"/0"), jsonValue(it)))
			}
			sub = append(sub, guard(fb+" != _|_",
				guard("len("+list+") == 0", patchOp("replace", q(lp), lv)),
				guard("len("+list+") > 0", adds...)))
		}
		if len(sub) > 0 {
			inner = append(inner, guard(sb+" != _|_", sub...))
		}
	}
	out = append(out, guard(base+" != _|_", inner...))
	return out
}

// validAffinity is kinitiras' test: some part has a term.
func validAffinity(a *corev1.Affinity) bool {
	if n := a.NodeAffinity; n != nil {
		if r := n.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
			for _, t := range r.NodeSelectorTerms {
				if len(t.MatchExpressions) > 0 || len(t.MatchFields) > 0 {
					return true
				}
			}
		}
		for _, t := range n.PreferredDuringSchedulingIgnoredDuringExecution {
			if len(t.Preference.MatchExpressions) > 0 || len(t.Preference.MatchFields) > 0 {
				return true
			}
		}
	}
	if x := a.PodAffinity; x != nil && len(x.RequiredDuringSchedulingIgnoredDuringExecution)+len(x.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		return true
	}
	x := a.PodAntiAffinity
	return x != nil && len(x.RequiredDuringSchedulingIgnoredDuringExecution)+len(x.PreferredDuringSchedulingIgnoredDuringExecution) > 0
}

// The conditions and their CUE comparison operators.
var conds = map[string]string{
	"Equal": "==", "NotEqual": "!=", "Gt": ">", "Gte": ">=", "Lt": "<", "Lte": "<=",
	"Exist": "", "NotExist": "", "In": "", "NotIn": "", "Regex": "=~",
}

// RenderValidate renders a validate template to CUE: it reads data and
// gives validate {valid, reason}. A condition hits when the data exists
// and the comparison holds (NotExist: when it is absent); affectMode
// reject (the default) denies a hit, allow denies a miss.
func RenderValidate(t *ValidateTemplate, field string) (string, []rules.FieldError) {
	p := &problems{field: field}
	if t.Type != TypeCondition {
		p.add(".type", "type %q is not condition", t.Type)
	}
	c := t.Condition
	if c == nil {
		p.add(".condition", "a condition is required")
		return "", p.errs
	}
	p.field += ".condition"
	if _, ok := conds[c.Cond]; !ok {
		p.add(".cond", "cond %q is not one of Equal, NotEqual, Exist, NotExist, In, NotIn, Gt, Gte, Lt, Lte, Regex", c.Cond)
	}
	if c.AffectMode != "" && c.AffectMode != "reject" && c.AffectMode != "allow" {
		p.add(".affectMode", "affectMode %q is not reject or allow", c.AffectMode)
	}
	if c.DataRef == nil {
		p.add(".dataRef", "dataRef (what is validated) is required")
		return "", p.errs
	}
	w := &cueWriter{}
	d := refExpr(p, ".dataRef", c.DataRef, "_d")
	var decls []string
	if c.ValueRef != nil && external(c.ValueRef.From) {
		decls = append(decls, refKey(c.ValueRef.From, ""))
	}
	if external(c.DataRef.From) {
		decls = append(decls, refKey(c.DataRef.From, "_d"))
	}
	hit := []string{d + " != _|_"}
	switch c.Cond {
	case "Exist":
	case "NotExist":
		hit = []string{d + " == _|_"}
	default:
		var v string
		list := false
		switch {
		case c.ValueRef != nil:
			v = refExpr(p, ".valueRef", c.ValueRef, "")
			hit = append(hit, v+" != _|_")
			list = true
		case c.Value != nil:
			v, list = constCUE(c.Value, p, ".value")
		default:
			p.add(".value", "cond %s needs a value or a valueRef", c.Cond)
		}
		if vp := c.ValueProcess; vp != nil && v != "" {
			if !slices.Contains([]string{"+", "-", "*", "/"}, vp.Operation) {
				p.add(".valueProcess.operation", "operation %q is not one of + - * /", vp.Operation)
			}
			with, err := operand(vp.OperationWith)
			if err != nil {
				p.add(".valueProcess.operationWith", "%v", err)
			}
			v = "(" + v + " " + vp.Operation + " " + with + ")"
		}
		switch c.Cond {
		case "In", "NotIn":
			if !list {
				p.add(".value", "cond %s needs a list (stringSlice, integerSlice or floatSlice)", c.Cond)
			}
			w.use("list")
			e := "list.Contains(" + v + ", " + d + ")"
			if c.Cond == "NotIn" {
				e = "!" + e
			}
			hit = append(hit, e)
		default:
			hit = append(hit, d+" "+conds[c.Cond]+" "+v)
		}
	}
	header(w, false, decls...)
	var b strings.Builder
	b.WriteString("validate: {\n_hit: *false | bool\nif ")
	b.WriteString(strings.Join(hit, " if "))
	b.WriteString(" {_hit: true}\n")
	deny := "_hit"
	if c.AffectMode == "allow" {
		deny = "!_hit"
	}
	fmt.Fprintf(&b, "if %s {\nvalid: false\nreason: %s\n}\n}", deny, q(c.Message))
	w.decl("%s", b.String())
	return w.finish(p)
}

// operand is valueProcess.operationWith as a CUE number: an integer, a
// decimal, or a percentage (50% is 0.5).
func operand(v *intstr.IntOrString) (string, error) {
	if v == nil {
		return "", fmt.Errorf("operationWith is required")
	}
	if v.Type == intstr.Int {
		return strconv.Itoa(int(v.IntVal)), nil
	}
	s, pct := strings.CutSuffix(v.StrVal, "%")
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return "", fmt.Errorf("%q is not a number or a percentage", v.StrVal)
	}
	if pct {
		f /= 100
	}
	return strconv.FormatFloat(f, 'f', -1, 64), nil
}
