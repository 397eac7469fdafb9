package gatekeeper

import (
	"context"
	"strings"

	gkv1 "github.com/modwright/modwright/api/gatekeeper/v1"
	"github.com/modwright/modwright/internal/crdschema"
	"github.com/modwright/modwright/internal/value"
)

// buildCRD builds the CustomResourceDefinition Gatekeeper creates for the
// template's constraint kind and checks it as the API server would: the
// kind's names, cluster-scoped, served as v1beta1 (stored), v1alpha1 and
// v1, with spec.parameters described by the template's schema.
func (t *Template) buildCRD(ct *gkv1.ConstraintTemplate) error {
	obj := constraintCRD(ct)
	set := crdschema.NewSet()
	if err := set.Add(context.Background(), obj); err != nil {
		return err
	}
	t.crd, t.crdObject = set, obj
	return nil
}

func constraintCRD(ct *gkv1.ConstraintTemplate) map[string]any {
	names := ct.Spec.CRD.Spec.Names
	plural := strings.ToLower(names.Kind)
	// legacySchema defaults to false in templates.gatekeeper.sh/v1, true
	// in the older versions; a legacy schema keeps unknown fields
	// everywhere, and no schema then allows any parameters.
	legacy := ct.APIVersion != gkv1.TemplatesGroup+"/"+gkv1.TemplateVersion
	var params map[string]any
	if v := ct.Spec.CRD.Spec.Validation; v != nil {
		if v.LegacySchema != nil {
			legacy = *v.LegacySchema
		}
		if len(v.OpenAPIV3Schema) > 0 {
			if s, err := value.Decode(v.OpenAPIV3Schema); err == nil {
				params, _ = s.(map[string]any)
			}
		}
	}
	if params == nil && legacy {
		params = map[string]any{}
	}
	if legacy {
		preserveUnknown(params)
	}
	openObject := map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	specProps := map[string]any{
		"match":                    openObject,
		"enforcementAction":        map[string]any{"type": "string", "default": gkv1.EnforcementDeny},
		"scopedEnforcementActions": map[string]any{"type": "array", "items": openObject},
	}
	if params != nil {
		specProps["parameters"] = params
	}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"metadata": map[string]any{"type": "object", "properties": map[string]any{
				"name": map[string]any{"type": "string", "maxLength": int64(63)},
			}},
			"spec":   map[string]any{"type": "object", "properties": specProps},
			"status": openObject,
		},
	}
	version := func(name string, storage bool) map[string]any {
		return map[string]any{"name": name, "served": true, "storage": storage,
			"schema":       map[string]any{"openAPIV3Schema": schema},
			"subresources": map[string]any{"status": map[string]any{}}}
	}
	namesObj := map[string]any{"kind": names.Kind, "listKind": names.Kind + "List", "plural": plural, "singular": plural,
		"categories": []any{"constraint", "constraints"}}
	if len(names.ShortNames) > 0 {
		sn := make([]any, len(names.ShortNames))
		for i, s := range names.ShortNames {
			sn[i] = s
		}
		namesObj["shortNames"] = sn
	}
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + gkv1.ConstraintsGroup,
			"labels": map[string]any{"gatekeeper.sh/constraint": "yes"}},
		"spec": map[string]any{
			"group": gkv1.ConstraintsGroup, "scope": "Cluster", "names": namesObj,
			"versions": []any{version("v1beta1", true), version("v1alpha1", false)},
		},
	}
}

// preserveUnknown marks every object, untyped and array-items node of a
// schema as keeping unknown fields (Gatekeeper's legacy schemas).
func preserveUnknown(s map[string]any) {
	if t, _ := s["type"].(string); t == "" || t == "object" {
		s["x-kubernetes-preserve-unknown-fields"] = true
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			if m, ok := p.(map[string]any); ok {
				preserveUnknown(m)
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		preserveUnknown(items)
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		preserveUnknown(ap)
	}
}
