package crdschema

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/warning"
)

// ErrInvalidCRD: a CustomResourceDefinition the API server would refuse.
var ErrInvalidCRD = errors.New("invalid CustomResourceDefinition")

// Set is the CRDs given, by the group, version and kind they serve.
type Set struct {
	versions map[schema.GroupVersionKind]*Version
}

// Version is one served version of a CRD.
type Version struct {
	CRD        string // the CRD's name
	GVK        schema.GroupVersionKind
	Namespaced bool
	Typing
	preserveUnknownFields bool
	strategy              *crStrategy
}

// NewSet is an empty set.
func NewSet() *Set { return &Set{versions: map[schema.GroupVersionKind]*Version{}} }

// Add validates a CustomResourceDefinition (apiextensions.k8s.io/v1, as a
// JSON tree) as the API server validates its creation and adds its served
// versions. An invalid one is ErrInvalidCRD with the API server's errors.
func (s *Set) Add(ctx context.Context, obj map[string]any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal(b, crd); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidCRD, err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	// As the API server's create strategy: the storage version is stored.
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			crd.Status.StoredVersions = []string{v.Name}
		}
	}
	internal := &apiextensionsinternal.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
		return fmt.Errorf("%w %s: %v", ErrInvalidCRD, crd.Name, err)
	}
	if errs := apiextensionsvalidation.ValidateCustomResourceDefinition(ctx, internal); len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidCRD, apierrors.NewInvalid(schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, crd.Name, errs).Error())
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		ver, err := newVersion(crd, v)
		if err != nil {
			return fmt.Errorf("%w %s: version %s: %v", ErrInvalidCRD, crd.Name, v.Name, err)
		}
		s.versions[ver.GVK] = ver
	}
	return nil
}

// newVersion builds what the API server builds to serve one version.
func newVersion(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion) (*Version, error) {
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
	out := &Version{CRD: crd.Name, GVK: gvk, Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped, preserveUnknownFields: crd.Spec.PreserveUnknownFields}
	internalSchema, err := versionSchema(crd, v.Name)
	if err != nil {
		return nil, err
	}
	if out.Typing, err = typingOf(internalSchema); err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internalSchema)
	if err != nil {
		return nil, err
	}
	st := &crStrategy{kind: gvk, namespaced: out.Namespaced, validator: validator, structural: out.Structural}
	if out.Structural != nil {
		st.rules = cel.NewValidator(out.Structural, true, celconfig.PerCallLimit)
	}
	if sub, err := apihelpers.GetSubresourcesForVersion(crd, v.Name); err == nil && sub != nil {
		st.status = sub.Status != nil
		if sub.Scale != nil {
			st.scale = &apiextensionsinternal.CustomResourceSubresourceScale{}
			if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(sub.Scale, st.scale, nil); err != nil {
				return nil, err
			}
		}
	}
	out.strategy = st
	return out, nil
}

// versionSchema is the OpenAPI schema of a CRD's version (nil: none), in
// the API server's internal form.
func versionSchema(crd *apiextensionsv1.CustomResourceDefinition, version string) (*apiextensionsinternal.JSONSchemaProps, error) {
	val, err := apihelpers.GetSchemaForVersion(crd, version)
	if err != nil || val == nil {
		return nil, err
	}
	iv := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, iv, nil); err != nil {
		return nil, err
	}
	return iv.OpenAPIV3Schema, nil
}

// typingOf is the typing of a version's schema (nil: none): its
// structural schema with defaults pruned as the API server prunes them.
func typingOf(internalSchema *apiextensionsinternal.JSONSchemaProps) (Typing, error) {
	if internalSchema == nil {
		return Typing{}, nil
	}
	ss, err := structuralschema.NewStructural(internalSchema)
	if err != nil {
		return Typing{}, err
	}
	ss = ss.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(ss); err != nil {
		return Typing{}, err
	}
	return Typing{Structural: ss, root: model.WithTypeAndObjectMeta(ss)}, nil
}

// For is the served version of apiVersion and kind, nil when no CRD of the
// set serves it (a nil Set serves none).
func (s *Set) For(apiVersion, kind string) *Version {
	if s == nil {
		return nil
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil
	}
	return s.versions[gv.WithKind(kind)]
}

// Versions are the served versions of the set, by group, version and
// kind.
func (s *Set) Versions() []*Version {
	if s == nil {
		return nil
	}
	out := make([]*Version, 0, len(s.versions))
	for _, v := range s.versions {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GVK.String() < out[j].GVK.String() })
	return out
}

// Kinds are the group/version/kinds the set serves, sorted.
func (s *Set) Kinds() []string {
	out := make([]string, 0, len(s.versions))
	for gvk := range s.versions {
		out = append(out, gvk.String())
	}
	sort.Strings(out)
	return out
}

// Result is an object checked as the API server checks it.
type Result struct {
	// Object is the object as the API server decodes it: defaulted,
	// unknown fields pruned (without the namespace assumed nor the
	// fields the server sets when it stores it).
	Object map[string]any
	// Errors are the API server's validation errors; UnknownFields the
	// fields it prunes, which kubectl's strict field validation (its
	// default) refuses.
	Errors        field.ErrorList
	UnknownFields []string
	// Warnings are what the API server adds to its answer: the failures
	// of x-kubernetes-validations rules that ratcheting forgave on an
	// update (a rule without oldSelf failing on a value the update left
	// unchanged is a warning, not an error).
	Warnings []string
}

// warnings records what the API server's validation code adds to a
// request's warnings (warning.AddWarning).
type warnings struct{ list []string }

func (w *warnings) AddWarning(_, text string) { w.list = append(w.list, text) }

// Err is the error the API server returns for the result, nil when it
// would admit the object (kubectl's strict field validation included).
func (r *Result) Err(v *Version) error {
	if len(r.UnknownFields) > 0 {
		var parts []string
		for _, f := range r.UnknownFields {
			parts = append(parts, fmt.Sprintf("unknown field %q", f))
		}
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: strict decoding error: %s",
			v.GVK.Kind, v.GVK.Version, v.GVK.Kind, strings.Join(parts, ", ")))
	}
	return r.SchemaErr(v)
}

// SchemaErr is Err without field validation: what the API server says of
// an object a mutating admission produced (unknown fields it adds are
// pruned, not refused).
func (r *Result) SchemaErr(v *Version) error {
	if len(r.Errors) > 0 {
		name, _, _ := unstructured.NestedString(r.Object, "metadata", "name")
		return apierrors.NewInvalid(v.GVK.GroupKind(), name, r.Errors)
	}
	return nil
}

// Validate checks obj (a JSON tree; not modified) as the API server
// checks the creation of a custom resource, or, with old, its update:
// defaulting, pruning, object metadata, the OpenAPI schema, list types,
// embedded resources and the x-kubernetes-validations rules (with
// ratcheting on update). namespace is the request's, for a namespaced
// object without one.
func (v *Version) Validate(ctx context.Context, obj, old map[string]any, namespace string) *Result {
	u := &unstructured.Unstructured{Object: asDecoded(obj)}
	defaultNS := v.Namespaced && u.GetNamespace() == ""
	if defaultNS {
		u.SetNamespace(namespace)
	}
	res := &Result{}
	res.UnknownFields = v.decode(u)
	// The object as decoded, without what the request or the strategy
	// add (the namespace assumed, the generation).
	res.Object = runtime.DeepCopyJSON(u.Object)
	if defaultNS {
		unstructured.RemoveNestedField(res.Object, "metadata", "namespace")
	}
	if old == nil {
		v.strategy.prepareForCreate(u)
		res.Errors = v.strategy.validate(ctx, u, nil)
		return res
	}
	o := &unstructured.Unstructured{Object: asDecoded(old)}
	if v.Namespaced && o.GetNamespace() == "" {
		o.SetNamespace(namespace)
	}
	// As the stored object and an update of it (kubectl apply patches the
	// stored object): the old one has a resourceVersion, the new one its.
	if o.GetResourceVersion() == "" {
		o.SetResourceVersion("1")
	}
	if u.GetResourceVersion() == "" {
		u.SetResourceVersion(o.GetResourceVersion())
	}
	v.decode(o)
	// As the API server's BeforeUpdate: the generation, the uid when none
	// is given, the creation and deletion timestamps are the stored ones.
	u.SetGeneration(o.GetGeneration())
	if u.GetUID() == "" {
		u.SetUID(o.GetUID())
	}
	if ts := o.GetCreationTimestamp(); !ts.IsZero() {
		u.SetCreationTimestamp(ts)
	}
	if o.GetDeletionTimestamp() != nil {
		u.SetDeletionTimestamp(o.GetDeletionTimestamp())
		u.SetDeletionGracePeriodSeconds(o.GetDeletionGracePeriodSeconds())
	}
	v.strategy.prepareForUpdate(u, o)
	rec := &warnings{}
	res.Errors = v.strategy.validate(warning.WithWarningRecorder(ctx, rec), u, o)
	res.Warnings = rec.list
	return res
}

// asDecoded is obj as the API server decodes a request's JSON (integers
// int64, other numbers float64), a copy.
func asDecoded(obj map[string]any) map[string]any {
	b, err := json.Marshal(obj)
	if err != nil {
		return runtime.DeepCopyJSON(obj)
	}
	var out map[string]any
	if err := utiljson.Unmarshal(b, &out); err != nil {
		return runtime.DeepCopyJSON(obj)
	}
	return out
}

// decode does to u what the API server's decoder does to a request's
// custom resource: defaults, prunes unknown fields (returned, sorted) and
// coerces the object metadata.
func (v *Version) decode(u *unstructured.Unstructured) []string {
	if v.Structural == nil {
		return nil
	}
	structuraldefaulting.Default(u.Object, v.Structural)
	var unknown []string
	apiVersion, kind := u.GetAPIVersion(), u.GetKind()
	if !v.preserveUnknownFields {
		unknown = structuralpruning.PruneWithOptions(u.Object, v.Structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, v.Structural)
	}
	_, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, v.Structural, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
	unknown = append(unknown, paths...)
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	slices.Sort(unknown)
	return slices.Compact(unknown)
}
