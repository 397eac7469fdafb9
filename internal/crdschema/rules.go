package crdschema

import (
	"context"
	"encoding/json"
	"fmt"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/environment"
)

// Structural is the structural schema of an OpenAPI v3 schema as a CRD
// version holds it (JSON, with the x-kubernetes-* extensions).
func Structural(schemaJSON []byte) (*structuralschema.Structural, error) {
	var v1 apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal(schemaJSON, &v1); err != nil {
		return nil, fmt.Errorf("the schema: %w", err)
	}
	var internal apiextensionsinternal.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, &internal, nil); err != nil {
		return nil, fmt.Errorf("the schema: %w", err)
	}
	return structuralschema.NewStructural(&internal)
}

// RuleCheck is one evaluation of a schema's x-kubernetes-validations rules.
type RuleCheck struct {
	// IsResourceRoot: the schema is a custom resource's root (apiVersion,
	// kind, metadata.name and metadata.generateName readable).
	IsResourceRoot bool
	PerCallLimit   uint64 // an expression's runtime cost limit
	Budget         int64  // the runtime cost budget of the whole check
	// Ratcheting: an error on a value that did not change between the old
	// and the new object is suppressed (CRDValidationRatcheting).
	Ratcheting bool
	Path       *field.Path // where errors start (the API server: none)
}

// ValidateRules runs every x-kubernetes-validations rule of ss against
// obj (and old, the object before an UPDATE, or nil) with
// apiextensions-apiserver's validator, as the API server does after the
// schema checks: the errors and the budget left.
func ValidateRules(ctx context.Context, ss *structuralschema.Structural, c RuleCheck, obj, old any) (field.ErrorList, int64) {
	var ratchet *common.CorrelatedObject
	if c.Ratcheting && old != nil {
		ratchet = common.NewCorrelatedObject(obj, old, &model.Structural{Structural: ss})
	}
	return validateRules(ctx, cel.NewValidator(ss, c.IsResourceRoot, c.PerCallLimit), ss, c, obj, old, ratchet)
}

// validateRules is ValidateRules with a validator compiled once (nil: the
// schema has no rules) and the correlation the schema checks share
// (ratchet; nil: none).
func validateRules(ctx context.Context, v *cel.Validator, ss *structuralschema.Structural, c RuleCheck, obj, old any, ratchet *common.CorrelatedObject) (field.ErrorList, int64) {
	if v == nil {
		return nil, c.Budget
	}
	var opts []cel.Option
	if c.Ratcheting && ratchet != nil {
		opts = append(opts, cel.WithRatcheting(ratchet))
	}
	return v.Validate(ctx, c.Path, ss, obj, old, c.Budget, opts...)
}

// CompileRules compiles ss's own x-kubernetes-validations rules as the API
// server does when a CRD is created or its rules change (new expressions'
// environment); isResourceRoot as in RuleCheck.
func CompileRules(ss *structuralschema.Structural, isResourceRoot bool, perCallLimit uint64) ([]cel.CompilationResult, error) {
	return cel.Compile(ss, model.SchemaDeclType(ss, isResourceRoot), perCallLimit,
		environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()), cel.NewExpressionsEnvLoader())
}
