package crdschema

import (
	"context"
	"fmt"
	"math"
	"strings"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// crStrategy is the API server's custom resource strategy, as
// apiextensions-apiserver's registry/customresource composes it (that
// package pulls the API server's storage in; the checks it composes are
// apiextensions-apiserver's and apimachinery's, called here in its order).
type crStrategy struct {
	kind       schema.GroupVersionKind
	namespaced bool
	validator  apiservervalidation.SchemaValidator
	structural *structuralschema.Structural
	status     bool // the status subresource is on
	scale      *apiextensionsinternal.CustomResourceSubresourceScale
	rules      *cel.Validator // compiled once; nil: no rules
}

// prepareForCreate: create cannot set status; generation 1.
func (s *crStrategy) prepareForCreate(u *unstructured.Unstructured) {
	if s.status {
		delete(u.Object, "status")
	}
	u.SetGeneration(1)
}

// prepareForUpdate: update cannot change status; any change but metadata
// increments the generation.
func (s *crStrategy) prepareForUpdate(u, old *unstructured.Unstructured) {
	if s.status {
		_, hasNew := u.Object["status"]
		oldStatus, hasOld := old.Object["status"]
		switch {
		case hasOld:
			u.Object["status"] = oldStatus
		case hasNew:
			delete(u.Object, "status")
		}
	}
	if !equality.Semantic.DeepEqual(withoutMetadata(u.Object), withoutMetadata(old.Object)) {
		u.SetGeneration(old.GetGeneration() + 1)
	}
}

func withoutMetadata(o map[string]any) map[string]any {
	c := make(map[string]any, len(o))
	for k, v := range o {
		if k != "metadata" {
			c[k] = v
		}
	}
	return c
}

// validate is the strategy's Validate (old nil) or ValidateUpdate:
// type and object metadata, the OpenAPI schema, scale paths, embedded
// resources, list types, then (unless an error blocks them) the
// x-kubernetes-validations rules, with ratcheting on update.
func (s *crStrategy) validate(ctx context.Context, u, old *unstructured.Unstructured) field.ErrorList {
	var ratchet *common.CorrelatedObject
	var schemaOpts []apiservervalidation.ValidationOption
	if old != nil && s.structural != nil {
		ratchet = common.NewCorrelatedObject(u.Object, old.Object, &model.Structural{Structural: s.structural})
		schemaOpts = append(schemaOpts, apiservervalidation.WithRatcheting(ratchet))
	}
	errs := s.typeMeta(u)
	if len(errs) == 0 {
		errs = append(errs, s.objectMeta(ctx, u, old)...)
		if old == nil {
			errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u.Object, s.validator)...)
		} else {
			errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(nil, u.Object, old.Object, s.validator, schemaOpts...)...)
		}
		errs = append(errs, s.scaleErrors(u)...)
	}
	if s.structural == nil {
		return errs
	}
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, u.Object, s.structural, false)...)
	if old == nil || len(structurallisttype.ValidateListSetsAndMaps(nil, s.structural, old.Object)) == 0 {
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, s.structural, u.Object)...)
	}
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
		}
	}
	check := RuleCheck{IsResourceRoot: true, PerCallLimit: celconfig.PerCallLimit, Budget: celconfig.RuntimeCELCostBudget}
	var oldObj any
	if old != nil {
		oldObj, check.Ratcheting = old.Object, true
	}
	ruleErrs, _ := validateRules(ctx, s.rules, s.structural, check, u.Object, oldObj, ratchet)
	return append(errs, ruleErrs...)
}

func (s *crStrategy) typeMeta(u *unstructured.Unstructured) field.ErrorList {
	var errs field.ErrorList
	if u.GetKind() != s.kind.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), u.GetKind(), fmt.Sprintf("must be %v", s.kind.Kind)))
	}
	if want := s.kind.Group + "/" + s.kind.Version; u.GetAPIVersion() != want {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), u.GetAPIVersion(), fmt.Sprintf("must be %v", want)))
	}
	return errs
}

func (s *crStrategy) objectMeta(ctx context.Context, u, old *unstructured.Unstructured) field.ErrorList {
	md, errs := objectMetaOf(u)
	if len(errs) > 0 {
		return errs
	}
	declarative := utilfeature.DefaultFeatureGate.Enabled(features.DeclarativeValidationBeta)
	if old == nil {
		return validation.ValidateObjectMetaDeclaratively(ctx, operation.Create, md, nil, s.namespaced, validation.NameIsDNSSubdomain, field.NewPath("metadata"), declarative)
	}
	oldMD, errs := objectMetaOf(old)
	if len(errs) > 0 {
		return errs
	}
	return validation.ValidateObjectMetaDeclaratively(ctx, operation.Update, md, oldMD, s.namespaced, nil, field.NewPath("metadata"), declarative)
}

func objectMetaOf(u *unstructured.Unstructured) (*metav1.ObjectMeta, field.ErrorList) {
	raw := u.Object["metadata"]
	if raw == nil {
		return &metav1.ObjectMeta{}, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, field.ErrorList{field.Invalid(field.NewPath("metadata"), raw, fmt.Sprintf("expected map[string]interface{}, got %T", raw))}
	}
	md := &metav1.ObjectMeta{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, md); err != nil {
		return nil, field.ErrorList{field.Invalid(field.NewPath("metadata"), raw, err.Error())}
	}
	return md, nil
}

// scaleErrors checks the scale subresource's replica paths and label
// selector path.
func (s *crStrategy) scaleErrors(u *unstructured.Unstructured) field.ErrorList {
	if s.scale == nil {
		return nil
	}
	var errs field.ErrorList
	replicas := func(p string) {
		n, _, err := unstructured.NestedInt64(u.Object, strings.Split(strings.TrimPrefix(p, "."), ".")...)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(field.NewPath(p), n, err.Error()))
		case n < 0:
			errs = append(errs, field.Invalid(field.NewPath(p), n, "should be a non-negative integer"))
		case n > math.MaxInt32:
			errs = append(errs, field.Invalid(field.NewPath(p), n, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32)))
		}
	}
	replicas(s.scale.SpecReplicasPath)
	replicas(s.scale.StatusReplicasPath)
	if p := s.scale.LabelSelectorPath; p != nil {
		sel, _, err := unstructured.NestedString(u.Object, strings.Split(strings.TrimPrefix(*p, "."), ".")...)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath(*p), sel, err.Error()))
		}
	}
	return errs
}
