package cli

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/admissionpolicy"
	"github.com/modwright/modwright/internal/crdschema"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/runner"
	"github.com/modwright/modwright/internal/source"
	"github.com/modwright/modwright/internal/value"
)

// KRM function protocol (config.kubernetes.io/v1).
const (
	resourceListAPIVersion = "config.kubernetes.io/v1"
	resourceListKind       = "ResourceList"
)

type krmOptions struct {
	admissionFlags
}

func newKRMCmd(s Streams) *cobra.Command {
	o := &krmOptions{}
	cmd := &cobra.Command{
		Use:   "krm [flags] < resource-list.yaml",
		Short: "Run as a KRM function: patch or reject the items of a ResourceList",
		Long: `krm is a KRM function (the config.kubernetes.io/v1 function protocol used by
kustomize and kpt). It reads a ResourceList on standard input, admits every
item through the rules as apply does, and writes the ResourceList back:

  - Rules (of any kind apply takes) come from functionConfig (one rule, or a
    List of them) and from the items. Rules among the items stay in the
    output unchanged (they are meant for the cluster too); functionConfig
    is never part of the output.
  - Namespace items serve as the others' Namespace (a ModRule's
    syntheticRefs.namespace, a Policy's namespaceObject).
  - Patched items replace the originals, in place. The annotations kustomize
    and kpt add to items (config.kubernetes.io/*,
    internal.config.kubernetes.io/*) are hidden from the rules, as the
    cluster would never see them, and kept in the output.
  - A rejected item is dropped from the output and reported in results with
    severity error (with a resourceRef); a rule that fails to apply is a
    warning; an invalid rule is an error naming the field and position.

Exit status: 0 when no result is an error; 1 otherwise (the ResourceList,
with its results, is still written); 2 when the input is not a ResourceList.

With kustomize (exec functions need kustomize's --enable-alpha-plugins and
--enable-exec), put the rule in a transformer file:

  # kustomization.yaml
  resources: [deployment.yaml]
  transformers: [modrule.yaml]

  # modrule.yaml: a ModRule with the function annotation
  apiVersion: api.kubemod.io/v1beta1
  kind: ModRule
  metadata:
    name: harden
    annotations:
      config.kubernetes.io/function: |
        exec:
          path: ./modwright-krm.sh   # a script running: modwright krm
  spec: ...

With kpt, give the rules as the function's config:

  kpt fn eval --exec "modwright krm" --fn-config rules.yaml`,
		Example: `  kustomize build --enable-alpha-plugins --enable-exec examples/kustomize
  modwright krm < testdata/cli/krm/resource-list.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runKRM(cmd.Context(), o, s)
		},
	}
	o.admissionFlags.add(cmd.Flags(), "items")
	return cmd
}

// krmResult is one entry of a ResourceList's results.
type krmResult struct {
	Message     string         `json:"message"`
	Severity    string         `json:"severity"`
	ResourceRef map[string]any `json:"resourceRef,omitempty"`
	Field       map[string]any `json:"field,omitempty"`
	File        map[string]any `json:"file,omitempty"`
}

// krmRun is one run of the KRM function: the results it reports.
type krmRun struct {
	results []krmResult
}

// fail reports an error, on an item (ref) and a field when known.
func (k *krmRun) fail(msg string, ref map[string]any, field string) {
	r := krmResult{Message: msg, Severity: "error", ResourceRef: ref}
	if field != "" {
		r.Field = map[string]any{"path": field}
	}
	k.results = append(k.results, r)
}

// warn reports a warning on an item.
func (k *krmRun) warn(msg string, ref, field map[string]any) {
	k.results = append(k.results, krmResult{Message: msg, Severity: "warning", ResourceRef: ref, Field: field})
}

// krmRules is what a ResourceList holds besides the objects to admit: the
// rules (of the registry's kinds, and Kubernetes' admission policies) and
// the context (Namespaces, CRDs).
type krmRules struct {
	reg      *kinds.Registry
	snap     *engine.Snapshot
	policies *admissionpolicy.Set
	crds     *crdschema.Set
	// resolver serves the Namespace items; nil when there are none.
	resolver engine.ObjectReader
	// broken: a rule or an admission policy is invalid, and nothing is
	// admitted.
	broken bool
}

func runKRM(ctx context.Context, o *krmOptions, s Streams) error {
	if ctx == nil {
		ctx = context.Background()
	}
	op, err := parseOperation(o.operation)
	if err != nil {
		return err
	}
	data, err := source.ReadLimited("standard input", s.In)
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	list, err := decodeResourceList(data)
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	items, _ := list["items"].([]any)
	k := &krmRun{}
	rs, err := k.loadRules(ctx, list, items, o.registry.kinds(o.clusterRules))
	if err != nil {
		return err
	}
	out, err := k.admit(ctx, o, op, rs, items)
	if err != nil {
		return err
	}
	outList := maps.Clone(list)
	delete(outList, "functionConfig")
	outList["items"] = out
	if len(k.results) > 0 {
		results := make([]any, len(k.results))
		for i, r := range k.results {
			results[i] = r
		}
		outList["results"] = results
	}
	b, err := yaml.Marshal(outList)
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	if _, err := s.Out.Write(b); err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	errs := 0
	for _, r := range k.results {
		if r.Severity == "error" {
			errs++
			fmt.Fprintln(s.Err, "error:", r.Message)
		}
	}
	if errs > 0 {
		return &ExitError{Code: 1}
	}
	return nil
}

// loadRules reads the rules of a ResourceList: functionConfig first, then
// the items; the admission policies and the CRDs among them; and the
// Namespace items as the context. Invalid ones are reported.
func (k *krmRun) loadRules(ctx context.Context, list map[string]any, items []any, reg *kinds.Registry) (*krmRules, error) {
	rs := &krmRules{reg: reg, policies: admissionpolicy.NewSet()}
	var ruleDocs []source.Document
	switch fc := list["functionConfig"].(type) {
	case nil:
	case map[string]any:
		docs, err := functionConfigRules(fc, reg)
		if err != nil {
			return nil, &ExitError{Code: 2, Err: err}
		}
		ruleDocs = append(ruleDocs, docs...)
	default:
		return nil, &ExitError{Code: 2, Err: fmt.Errorf("functionConfig must be an object, not a JSON %s", value.TypeName(fc))}
	}
	// CRDs among the items: their kinds are validated as the API server
	// validates them, around the rules.
	for _, it := range items {
		if m, ok := it.(map[string]any); ok && m["kind"] == "CustomResourceDefinition" && m["apiVersion"] == "apiextensions.k8s.io/v1" {
			if rs.crds == nil {
				rs.crds = crdschema.NewSet()
			}
			if err := rs.crds.Add(ctx, withoutKRMAnnotations(m)); err != nil {
				k.fail(err.Error(), resourceRef(m), "")
			}
		}
	}
	var contextDocs []source.Document
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, &ExitError{Code: 2, Err: fmt.Errorf("items[%d] must be an object, not a JSON %s", i, value.TypeName(it))}
		}
		d := source.Document{Origin: itemOrigin(m, i), Object: m}
		if reg.Owns(&d) {
			d.Object = withoutKRMAnnotations(m)
			var err error
			if d.JSON, err = value.Encode(d.Object); err != nil {
				return nil, &ExitError{Code: 2, Err: err}
			}
			ruleDocs = append(ruleDocs, d)
		}
		if d.Kind() == "Namespace" {
			contextDocs = append(contextDocs, source.Document{Origin: d.Origin, Object: withoutKRMAnnotations(m)})
		}
	}
	// Kubernetes' own admission policies, in the functionConfig or among
	// the items, run around the rules as the API server runs them.
	addNative := func(m map[string]any) {
		if err := rs.policies.Add(m); err != nil {
			k.fail(err.Error(), resourceRef(m), "")
			rs.broken = true
		}
	}
	kept := ruleDocs[:0:0]
	for _, d := range ruleDocs {
		if admissionpolicy.Handles(d.Object) {
			addNative(d.Object)
			continue
		}
		kept = append(kept, d)
	}
	for _, it := range items {
		if m := it.(map[string]any); admissionpolicy.Handles(m) {
			addNative(withoutKRMAnnotations(m))
		}
	}
	res := source.LoadRules(kept, reg)
	for _, e := range res.Errors {
		k.fail(e.Error(), nil, "")
	}
	for _, d := range res.Deprecated {
		k.warn(d, nil, nil)
	}
	rs.broken = rs.broken || len(res.Errors) > 0
	if len(contextDocs) > 0 {
		r, _, err := newStaticResolver(contextDocs)
		if err != nil {
			k.fail(err.Error(), nil, "")
		} else {
			rs.resolver = r
		}
	}
	rs.snap = engine.NewSnapshot(res.Rules)
	return rs, nil
}

// admit runs every item that is not a rule through the admission chain
// and returns the output items: rules as they are, admitted items
// (patched ones with their function annotations back), rejected ones
// dropped and reported. With broken rules nothing is admitted.
func (k *krmRun) admit(ctx context.Context, o *krmOptions, op rules.Operation, rs *krmRules, items []any) ([]any, error) {
	objs := contextObjects(rs.resolver)
	if rs.policies.Len() > 0 {
		objs = nil // params and namespaces: the items
		for _, it := range items {
			objs = append(objs, withoutKRMAnnotations(it.(map[string]any)))
		}
	}
	opts := engineOptions(rs.resolver, rs.crds)
	opts.NoTrace = true
	var drv runner.Driver = runner.NewEngineOptions(rs.snap, opts)
	if o.webhook {
		drv = runner.NewWebhookOptions(rs.snap, opts)
	}
	// The manifests stay as written (no defaults added); the API server's
	// checks run on decoded copies.
	chain := runner.NewChain(drv, runner.ChainOptions{CRDs: rs.crds, Policies: rs.policies, Objects: objs,
		User: userOf(rs.resolver), AsWritten: true})
	out := make([]any, 0, len(items))
	for i, it := range items {
		m := it.(map[string]any)
		if rs.reg.Owns(&source.Document{Object: m}) || admissionpolicy.Handles(m) || rs.broken {
			out = append(out, m) // rules stay as they are; with broken rules nothing is admitted
			continue
		}
		a := newAdmission(withoutKRMAnnotations(m), o.namespace)
		res, err := chain.Run(ctx, a.request(op))
		if err == nil {
			err = res.Refusal
		}
		if err != nil {
			return nil, &ExitError{Code: 2, Err: fmt.Errorf("%s: %w", itemOrigin(m, i), err)}
		}
		ref := resourceRef(m)
		k.warnings(res, ref)
		switch {
		case !res.Allowed:
			k.fail(res.DenialText(), ref, "")
		case len(res.Patch) == 0:
			out = append(out, m)
		default:
			out = append(out, withAnnotations(res.Object.(map[string]any), krmAnnotations(m)))
		}
	}
	return out, nil
}

// warnings reports what an item's admission warned about: the admission
// policies, the rules' errors (with their field) and warnings, the
// schema's.
func (k *krmRun) warnings(res *runner.Result, ref map[string]any) {
	for _, w := range res.PolicyWarnings {
		k.warn(w, ref, nil)
	}
	if dec := res.Decision; dec != nil {
		for _, re := range dec.Errors {
			k.warn(re.Error(), ref, fieldOf(re))
		}
		for _, w := range dec.Warnings {
			k.warn(runner.WarningText(w), ref, nil)
		}
	}
	for _, w := range res.SchemaWarnings {
		k.warn(w, ref, nil)
	}
}

// decodeResourceList decodes a ResourceList (YAML or JSON), numbers kept
// exact.
func decodeResourceList(data []byte) (map[string]any, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("standard input is not a ResourceList: %v", err)
	}
	v, err := value.Decode(j)
	if err != nil {
		return nil, fmt.Errorf("standard input is not a ResourceList: %v", err)
	}
	if v == nil {
		return nil, fmt.Errorf("standard input is empty: krm reads a ResourceList (%s) on standard input", resourceListAPIVersion)
	}
	list, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("standard input is not a ResourceList (%s) but a JSON %s", resourceListAPIVersion, value.TypeName(v))
	}
	if k, _ := list["kind"].(string); k != resourceListKind {
		return nil, fmt.Errorf("standard input is not a ResourceList: kind is %q", k)
	}
	if av, _ := list["apiVersion"].(string); av != resourceListAPIVersion && av != "config.kubernetes.io/v1alpha1" {
		return nil, fmt.Errorf("ResourceList apiVersion %q is not supported; use %s", av, resourceListAPIVersion)
	}
	if it, ok := list["items"]; ok && it != nil {
		if _, ok := it.([]any); !ok {
			return nil, fmt.Errorf("ResourceList items must be a list, not a JSON %s", value.TypeName(it))
		}
	}
	return list, nil
}

// functionConfigRules returns the rules of a functionConfig: a rule of a
// kind of reg or a Validating or MutatingAdmissionPolicy or binding, or a
// List of them.
func functionConfigRules(fc map[string]any, reg *kinds.Registry) ([]source.Document, error) {
	kind, _ := fc["kind"].(string)
	var objs []map[string]any
	isList := false
	switch {
	case reg.Owns(&source.Document{Object: fc}) || admissionpolicy.Handles(fc):
		objs = append(objs, fc)
	case strings.HasSuffix(kind, "List"):
		isList = true
		items, _ := fc["items"].([]any)
		for i, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("functionConfig items[%d] must be an object, not a JSON %s", i, value.TypeName(it))
			}
			objs = append(objs, m)
		}
	default:
		return nil, fmt.Errorf("functionConfig must be a %s or an admission policy, or a List of them, not %q", reg.Names(), kind)
	}
	docs := make([]source.Document, 0, len(objs))
	for i, m := range objs {
		origin := "functionConfig"
		if isList {
			origin = fmt.Sprintf("functionConfig items[%d]", i)
		}
		d := source.Document{Origin: origin, Object: withoutKRMAnnotations(m)}
		if !reg.Owns(&d) && !admissionpolicy.Handles(d.Object) {
			return nil, fmt.Errorf("%s is a %s, not a %s or an admission policy", origin, d.Kind(), reg.Names())
		}
		j, err := value.Encode(d.Object)
		if err != nil {
			return nil, err
		}
		d.JSON = j
		docs = append(docs, d)
	}
	return docs, nil
}

// isKRMAnnotation reports whether an annotation is one kustomize or kpt
// adds for its own book-keeping.
func isKRMAnnotation(k string) bool {
	return strings.HasPrefix(k, "config.kubernetes.io/") || strings.HasPrefix(k, "internal.config.kubernetes.io/") ||
		strings.HasPrefix(k, "config.k8s.io/")
}

func krmAnnotations(obj map[string]any) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	out := map[string]any{}
	for k, v := range ann {
		if isKRMAnnotation(k) {
			out[k] = v
		}
	}
	return out
}

// withoutKRMAnnotations returns obj without the function annotations (a
// shallow copy where it differs; obj is not modified).
func withoutKRMAnnotations(obj map[string]any) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	if len(krmAnnotations(obj)) == 0 {
		return obj
	}
	kept := map[string]any{}
	for k, v := range ann {
		if !isKRMAnnotation(k) {
			kept[k] = v
		}
	}
	md2 := maps.Clone(md)
	if len(kept) == 0 {
		delete(md2, "annotations")
	} else {
		md2["annotations"] = kept
	}
	out := maps.Clone(obj)
	out["metadata"] = md2
	return out
}

// withAnnotations returns obj with the annotations added (obj is not
// modified).
func withAnnotations(obj map[string]any, add map[string]any) map[string]any {
	if len(add) == 0 {
		return obj
	}
	md, _ := obj["metadata"].(map[string]any)
	md2 := maps.Clone(md)
	if md2 == nil {
		md2 = map[string]any{}
	}
	ann, _ := md2["annotations"].(map[string]any)
	ann2 := maps.Clone(ann)
	if ann2 == nil {
		ann2 = map[string]any{}
	}
	maps.Copy(ann2, add)
	md2["annotations"] = ann2
	out := maps.Clone(obj)
	out["metadata"] = md2
	return out
}

func resourceRef(obj map[string]any) map[string]any {
	ref := map[string]any{}
	for _, k := range []string{"apiVersion", "kind"} {
		if v, ok := obj[k].(string); ok {
			ref[k] = v
		}
	}
	md, _ := obj["metadata"].(map[string]any)
	for _, k := range []string{"name", "namespace"} {
		if v, ok := md[k].(string); ok && v != "" {
			ref[k] = v
		}
	}
	return ref
}

func itemOrigin(obj map[string]any, i int) string {
	ref := resourceRef(obj)
	name, _ := ref["name"].(string)
	if ns, _ := ref["namespace"].(string); ns != "" {
		name = ns + "/" + name
	}
	return fmt.Sprintf("items[%d] (%v %s)", i, ref["kind"], name)
}

func fieldOf(re engine.RuleError) map[string]any {
	if re.Field == "" {
		return nil
	}
	return map[string]any{"path": re.Field}
}
