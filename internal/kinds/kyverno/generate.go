package kyverno

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kyvernov1 "github.com/modwright/modwright/api/kyverno/v1"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/lang/conditions"
	"github.com/modwright/modwright/internal/lang/subst"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// The labels Kyverno puts on a generated object (its managed-by label, the
// policy and rule, the trigger), read by its CLI and controllers.
const (
	labelManagedBy        = "app.kubernetes.io/managed-by"
	labelPolicyName       = "generate.kyverno.io/policy-name"
	labelPolicyNamespace  = "generate.kyverno.io/policy-namespace"
	labelRuleName         = "generate.kyverno.io/rule-name"
	labelTriggerVersion   = "generate.kyverno.io/trigger-version"
	labelTriggerGroup     = "generate.kyverno.io/trigger-group"
	labelTriggerKind      = "generate.kyverno.io/trigger-kind"
	labelTriggerNamespace = "generate.kyverno.io/trigger-namespace"
	labelTriggerUID       = "generate.kyverno.io/trigger-uid"
	labelTriggerName      = "generate.kyverno.io/trigger-name"
	labelCloneSource      = "generate.kyverno.io/clone-source"
)

// maxGeneratedPerRule bounds the objects one rule generates for one
// request (a cloneList, a foreach).
const maxGeneratedPerRule = 1000

// generation is a compiled generate: one pattern, or foreach entries.
type generation struct {
	synchronize bool
	// existing: generateExisting (nil: the policy's spec.generateExisting)
	existing *bool
	// orphan: orphanDownstreamOnPolicyDelete
	orphan  bool
	pattern *genPattern
	foreach []*foreachG
}

// genPattern is a GeneratePattern compiled once as one document: Kyverno
// substitutes the variables of the whole pattern (target, data, clone)
// before reading it.
type genPattern struct {
	field string
	doc   *subst.Document
}

// foreachG is a compiled generate.foreach entry.
type foreachG struct {
	field   string
	list    *jpExpr
	context []*ctxEntry
	pre     *conditions.Set
	pattern *genPattern
}

// generation compiles a rule's generate.
func (c *compiler) generation(field string, raw []byte) *generation {
	var g kyvernov1.Generation
	if !c.decodeInto(field, raw, &g) {
		return nil
	}
	out := &generation{synchronize: g.Synchronize, existing: g.GenerateExisting, orphan: g.OrphanDownstreamOnPolicyDelete}
	if len(g.ForEach) > 0 {
		if !emptyPattern(&g.GeneratePattern) {
			c.errf(field, "a generate has foreach or a pattern (data, clone or cloneList), not both")
		}
		for i := range g.ForEach {
			f := &g.ForEach[i]
			ff := fmt.Sprintf("%s.foreach[%d]", field, i)
			fg := &foreachG{field: ff, context: c.contextEntries(ff+".context", f.Context)}
			if f.List == "" {
				c.errf(ff+".list", "a foreach needs a list")
			} else {
				fg.list = c.jmesPath(ff+".list", f.List)
			}
			if f.Preconditions != nil {
				fg.pre = c.block(ff+".preconditions", f.Preconditions.All, f.Preconditions.Any, f.Preconditions.Any != nil)
			}
			fg.pattern = c.genPattern(ff, &f.GeneratePattern)
			out.foreach = append(out.foreach, fg)
		}
		return out
	}
	out.pattern = c.genPattern(field, &g.GeneratePattern)
	return out
}

func emptyPattern(p *kyvernov1.GeneratePattern) bool {
	return p.Kind == "" && p.Name == "" && p.Data == nil && p.Clone == (kyvernov1.CloneFrom{}) && len(p.CloneList.Kinds) == 0
}

// genPattern checks a pattern as Kyverno's policy validation does and
// compiles it.
func (c *compiler) genPattern(field string, p *kyvernov1.GeneratePattern) *genPattern {
	sources := 0
	if p.Data != nil {
		sources++
	}
	if p.Clone != (kyvernov1.CloneFrom{}) {
		sources++
		if p.Clone.Name == "" {
			c.errf(field+".clone.name", "a clone needs the name of its source")
		}
	}
	if len(p.CloneList.Kinds) > 0 {
		sources++
		for i, k := range p.CloneList.Kinds {
			if av, kind := splitKind(k); av == "" || kind == "" {
				c.errf(fmt.Sprintf("%s.cloneList.kinds[%d]", field, i), "want apiVersion/Kind (v1/ConfigMap), not %q", k)
			}
		}
		if p.CloneList.Selector != nil {
			if _, err := metav1.LabelSelectorAsSelector(p.CloneList.Selector); err != nil {
				c.errf(field+".cloneList.selector", "%v", err)
			}
		}
	}
	switch {
	case sources > 1:
		c.errf(field, "only one of data, clone or cloneList may be given")
	case sources == 0:
		c.errf(field, "a generate needs data, clone or cloneList")
	}
	if len(p.CloneList.Kinds) == 0 {
		if p.Kind == "" {
			c.errf(field+".kind", "a generate needs the kind of the object")
		}
		if p.Name == "" {
			c.errf(field+".name", "a generate needs the name of the object")
		}
	}
	raw, err := json.Marshal(p)
	if err != nil {
		c.errf(field, "%v", err)
		return nil
	}
	d := c.document(field, raw)
	if d == nil {
		return nil
	}
	return &genPattern{field: field, doc: d}
}

// splitKind splits "apps/v1/Deployment" or "v1/ConfigMap" into apiVersion
// and kind.
func splitKind(s string) (apiVersion, kind string) {
	i := strings.LastIndex(s, "/")
	if i < 0 {
		return "", s
	}
	return s[:i], s[i+1:]
}

// generateRule evaluates a generate rule: the objects it generates are
// recorded in the result and given to the engine (Handle.Generate) when
// every one of them could be made. Kyverno generates on CREATE and
// UPDATE. A DELETE gives no result; a synchronizing rule gives the engine
// the objects that go with the deleted trigger (their identity: no clone
// source is read).
func (p *Policy) generateRule(h *engine.Handle, r *rule, s *scope) (RuleResult, bool) {
	if h.Request().Operation == rules.Delete {
		if r.g.synchronize {
			if objs, err := p.generated(h, r, s, true); err == nil {
				for _, o := range objs {
					h.Generate(r.name, o, true)
				}
			}
		}
		return RuleResult{}, false
	}
	objs, err := p.generated(h, r, s, false)
	if err != nil {
		return errorResult(r, "failed to generate", err), true
	}
	if len(objs) == 0 && r.g.foreach != nil {
		return RuleResult{Rule: r.name, Status: Skip, Message: "0 elements processed"}, true
	}
	for _, o := range objs {
		h.Generate(r.name, o, r.g.synchronize)
	}
	return RuleResult{Rule: r.name, Status: Pass, Generated: objs}, true
}

// generated are the objects of a rule (identity: for a trigger going, only
// which objects they are).
func (p *Policy) generated(h *engine.Handle, r *rule, s *scope, identity bool) ([]map[string]any, error) {
	var objs []map[string]any
	var err error
	if r.g.foreach == nil {
		return p.generatePattern(h, r, s, r.g.pattern, objs, identity)
	}
	for _, fe := range r.g.foreach {
		if objs, err = p.generateForeach(h, r, s, fe, objs, identity); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

func (p *Policy) generateForeach(h *engine.Handle, r *rule, s *scope, fe *foreachG, objs []map[string]any, identity bool) ([]map[string]any, error) {
	if fe.list == nil || fe.pattern == nil {
		return objs, nil
	}
	v, err := s.search(fe.list)
	if err != nil && !errors.Is(err, subst.ErrUndefined) {
		return nil, fmt.Errorf("%s.list: %w", fe.field, err)
	}
	elems, ok := v.([]any)
	if !ok {
		elems = []any{v}
	}
	for i, el := range elems {
		if el == nil {
			continue
		}
		if err := h.Context().Err(); err != nil {
			return nil, err
		}
		es := s.with("element", el).with("elementIndex", float64(i)).with("element0", el).with("elementIndex0", float64(i))
		if es, err = es.load(h, fe.context); err != nil {
			return nil, err
		}
		if fe.pre != nil {
			pass, _, err := fe.pre.Eval(es.ctx, es, nil)
			if err != nil {
				return nil, fmt.Errorf("%s.preconditions: %w", fe.field, err)
			}
			if !pass {
				continue
			}
		}
		if objs, err = p.generatePattern(h, r, es, fe.pattern, objs, identity); err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
	}
	return objs, nil
}

// generatePattern makes the objects of one pattern: data as it is, or
// copies of the clone source or of the cloneList's objects.
func (p *Policy) generatePattern(h *engine.Handle, r *rule, s *scope, gp *genPattern, objs []map[string]any, identity bool) ([]map[string]any, error) {
	if gp == nil {
		return objs, nil
	}
	v, err := gp.doc.Substitute(s.ctx, s)
	if err != nil {
		return nil, fmt.Errorf("variable substitution failed: %w", err)
	}
	// Read as substituted, never changed: it shares parts with the
	// compiled pattern and with the request.
	pat, _ := v.(map[string]any)
	apiVersion, kind, ns, name := str(pat, "apiVersion"), str(pat, "kind"), str(pat, "namespace"), str(pat, "name")
	clone, _ := pat["clone"].(map[string]any)
	cloneList, _ := pat["cloneList"].(map[string]any)
	listKinds, _ := cloneList["kinds"].([]any)
	if p.ns != "" && ns != p.ns && len(listKinds) == 0 {
		// Kyverno: a namespaced policy generates in its namespace only.
		return nil, fmt.Errorf("%s.namespace: a Policy in %s may generate only in its own namespace, not in %q", gp.field, p.ns, ns)
	}
	add := func(obj map[string]any) error {
		if len(objs) >= maxGeneratedPerRule {
			return fmt.Errorf("a rule may generate at most %d objects", maxGeneratedPerRule)
		}
		p.labelGenerated(h, r, obj)
		objs = append(objs, obj)
		return nil
	}
	switch {
	case pat["data"] != nil:
		data, ok := pat["data"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s.data: want an object, not a JSON %s", gp.field, value.TypeName(pat["data"]))
		}
		obj := value.DeepCopy(data).(map[string]any)
		setTarget(obj, apiVersion, kind, ns, name)
		return objs, add(obj)
	case str(clone, "name") != "":
		cloneNS, cloneName := str(clone, "namespace"), str(clone, "name")
		if cloneNS == ns && cloneName == name {
			return objs, nil // Kyverno skips a clone of itself
		}
		obj := map[string]any{}
		if !identity {
			src, err := p.readSource(h, apiVersion, kind, cloneNS, cloneName)
			if err != nil {
				return nil, fmt.Errorf("%s.clone: %w", gp.field, err)
			}
			obj = cloneOf(src, ns)
		}
		setTarget(obj, apiVersion, kind, ns, name)
		return objs, add(obj)
	case len(listKinds) > 0:
		listNS := str(cloneList, "namespace")
		if listNS == ns {
			return objs, nil // Kyverno skips a clone of itself
		}
		sel, err := selectorText(cloneList["selector"])
		if err != nil {
			return nil, fmt.Errorf("%s.cloneList.selector: %w", gp.field, err)
		}
		for _, k := range listKinds {
			ks, _ := k.(string)
			av, kind := splitKind(ks)
			srcs, err := p.listSources(h, av, kind, listNS, sel)
			if err != nil {
				return nil, fmt.Errorf("%s.cloneList: %w", gp.field, err)
			}
			for _, src := range srcs {
				obj := cloneOf(src, ns)
				setTarget(obj, av, kind, ns, str(metadataOf(src), "name"))
				if err := add(obj); err != nil {
					return nil, err
				}
			}
		}
		return objs, nil
	}
	return objs, nil
}

// str is a string member of a JSON map ("" when absent or not a string).
func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// selectorText is a label selector (a JSON tree, nil for none) in the
// selector syntax a KindReader lists by.
func selectorText(v any) (string, error) {
	if v == nil {
		return "", nil
	}
	var ls metav1.LabelSelector
	if err := remarshal(v, &ls); err != nil {
		return "", err
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return "", err
	}
	return sel.String(), nil
}

// remarshal reads a JSON tree into out (a label selector: small).
func remarshal(v any, out any) error {
	raw, err := value.AppendJSON(nil, v)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

func metadataOf(obj map[string]any) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	return md
}

// setTarget gives obj the target's apiVersion, kind (unless the data has
// one), namespace and name, as Kyverno's generator does.
func setTarget(obj map[string]any, apiVersion, kind, namespace, name string) {
	obj["apiVersion"] = apiVersion
	if k, _ := obj["kind"].(string); k == "" {
		obj["kind"] = kind
	}
	md := metadataOf(obj)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	md["name"] = name
	if namespace != "" {
		md["namespace"] = namespace
	} else {
		delete(md, "namespace")
	}
}

// cloneOf copies a clone source as Kyverno does: without what the API
// server owns (uid, resourceVersion, creationTimestamp, managedFields,
// selfLink), without owner references when it lands in another
// namespace, marked as a clone's copy.
func cloneOf(src map[string]any, targetNS string) map[string]any {
	obj := value.DeepCopy(src).(map[string]any)
	md := metadataOf(obj)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	dropServerOwned(md)
	if ns, _ := md["namespace"].(string); ns != targetNS {
		delete(md, "ownerReferences")
	}
	delete(obj, "status")
	labels, _ := md["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		md["labels"] = labels
	}
	labels[labelCloneSource] = ""
	return obj
}

// dropServerOwned removes from a generated object's metadata what the
// API server owns (its copy's uid, resourceVersion, creation time,
// managedFields, selfLink, generation), as Kyverno's generators do.
func dropServerOwned(md map[string]any) {
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "selfLink", "generation"} {
		delete(md, k)
	}
}

// labelGenerated adds Kyverno's labels to an object a rule generated:
// managed by kyverno, the policy and rule, the trigger.
func (p *Policy) labelGenerated(h *engine.Handle, r *rule, obj map[string]any) {
	addGenerateLabels(h, obj, map[string]string{labelPolicyName: p.name, labelPolicyNamespace: p.ns, labelRuleName: r.name})
}

// addGenerateLabels adds Kyverno's labels to a generated object: managed
// by kyverno, the trigger (the object under evaluation), and extra.
func addGenerateLabels(h *engine.Handle, obj map[string]any, extra map[string]string) {
	md := metadataOf(obj)
	if md == nil {
		md = map[string]any{}
		obj["metadata"] = md
	}
	labels, _ := md["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		md["labels"] = labels
	}
	labels[labelManagedBy] = "kyverno"
	for k, v := range extra {
		labels[k] = v
	}
	trig, _ := h.Object().(map[string]any)
	av, _ := trig["apiVersion"].(string)
	gv, _ := schema.ParseGroupVersion(av)
	kind, _ := trig["kind"].(string)
	tmd := metadataOf(trig)
	ns, _ := tmd["namespace"].(string)
	if ns == "" {
		ns = h.Request().Namespace
	}
	uid, _ := tmd["uid"].(string)
	labels[labelTriggerVersion] = gv.Version
	labels[labelTriggerGroup] = gv.Group
	labels[labelTriggerKind] = kind
	labels[labelTriggerNamespace] = ns
	labels[labelTriggerUID] = uid
}

// readSource reads a clone source through the engine's KindReader; a
// Policy reads in its own namespace only, as its rule reader may.
func (p *Policy) readSource(h *engine.Handle, apiVersion, kind, ns, name string) (map[string]any, error) {
	kr, err := p.sourceReader(h, "clones", apiVersion, kind, ns, name)
	if err != nil {
		return nil, err
	}
	obj, err := kr.GetKind(h.Context(), apiVersion, kind, ns, name)
	if err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, fmt.Errorf("source %s %s/%s not found", kind, ns, name)
	}
	return obj, nil
}

func (p *Policy) listSources(h *engine.Handle, apiVersion, kind, ns, selector string) ([]map[string]any, error) {
	kr, err := p.sourceReader(h, "clones", apiVersion, kind, ns, "")
	if err != nil {
		return nil, err
	}
	objs, err := kr.ListKind(h.Context(), apiVersion, kind, ns, selector, maxGeneratedPerRule+1)
	if err != nil {
		return nil, err
	}
	if len(objs) > maxGeneratedPerRule {
		return nil, fmt.Errorf("more than %d %s objects to clone: a rule may generate at most %d", maxGeneratedPerRule, kind, maxGeneratedPerRule)
	}
	return objs, nil
}

// ErrNoSourceReader is in the chain of the error of a clone without a
// reader of objects (offline: no --context objects).
var ErrNoSourceReader = engine.NoReader("no reader of objects to clone")

// sourceReader is the engine's KindReader for a read of the policy (what
// it does with the objects, for the error: "clones", "reads params"): a
// Policy reads in its own namespace only, as its rule reader may.
func (p *Policy) sourceReader(h *engine.Handle, what, apiVersion, kind, ns, name string) (engine.KindReader, error) {
	if p.ns != "" && ns != p.ns {
		return nil, fmt.Errorf("%w: a Policy in %s %s only from its own namespace, not from %q", ErrOutsideNamespace, p.ns, what, ns)
	}
	kr := h.Kinds()
	if kr == nil {
		return nil, ErrNoSourceReader
	}
	if p.ns != "" {
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil {
			return nil, err
		}
		plural, _ := meta.UnsafeGuessKindToResource(gv.WithKind(kind))
		if err := h.AuthorizeRead(p.ns, gv.Group, plural.Resource, ns, name); err != nil {
			return nil, err
		}
	}
	return kr, nil
}
