// Package crdtest checks the committed CRDs offline, as the API server
// would: generated files up to date, schemas structural, rules within
// their cost limits, and custom resources validated on create. It is for
// tests only.
package crdtest

import (
	"bytes"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	schemavalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/testtool"
)

// GeneratedFiles regenerates the CRDs and deep copies of the API package
// dir (./api/v1alpha1) and compares them with the committed copies:
// committed maps a generated file's name to the directories holding it.
// Run `make generate` when it fails.
func GeneratedFiles(t *testing.T, dir string, committed map[string][]string) {
	t.Helper()
	cg := testtool.Find(t, "controller-gen")
	root := testtool.RepoRoot(t)
	out := t.TempDir()
	cmd := exec.Command(cg, "object", "crd:crdVersions=v1", "paths="+dir,
		"output:crd:dir="+out, "output:object:dir="+out)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen: %v\n%s", err, b)
	}
	for name, dirs := range committed {
		want, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, dir := range dirs {
			path := filepath.Join(root, dir, name)
			if got, err := os.ReadFile(path); err != nil {
				t.Error(err)
			} else if !bytes.Equal(got, want) {
				t.Errorf("%s is stale; run make generate (-committed +generated):\n%s", path, cmp.Diff(string(got), string(want)))
			}
		}
	}
}

// Validator validates custom resources as the kube-apiserver does on
// create, offline: unknown fields (as fieldValidation=Strict), defaults,
// the OpenAPI schema, list types, and the x-kubernetes-validations rules
// with the apiserver's cost limits.
type Validator struct {
	structural *structuralschema.Structural
	schema     schemavalidation.SchemaValidator
	cel        *cel.Validator
}

// Load reads a committed CRD and checks, as the API server checks a CRD
// it is given, that its schema is structural and every rule compiles as a
// new rule, within the estimated cost limits of one rule and of the whole
// schema. (apiextensions' CRD validation itself would add gRPC to the
// module graph; the e2e tests install the CRDs on a real API server.)
func Load(t testing.TB, name string) *Validator {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testtool.RepoRoot(t), "deploy", "crds", name))
	if err != nil {
		t.Fatal(err)
	}
	var v1 apiextv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &v1); err != nil {
		t.Fatal(err)
	}
	apiextv1.SetObjectDefaults_CustomResourceDefinition(&v1)
	var crd apiextensions.CustomResourceDefinition
	if err := apiextv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&v1, &crd, nil); err != nil {
		t.Fatal(err)
	}
	// The conversion moves a schema all versions share to spec.validation.
	props := crd.Spec.Validation.OpenAPIV3Schema
	s, err := structuralschema.NewStructural(props)
	if err != nil {
		t.Fatal(err)
	}
	one, total := uint64(1), uint64(0)
	checkRules(t, field.NewPath("openAPIV3Schema"), s, model.SchemaDeclType(s, true), &one, &total)
	if total > staticEstimatedCRDCostLimit {
		t.Errorf("%s: estimated cost of all rules %d exceeds %d", name, total, staticEstimatedCRDCostLimit)
	}
	t.Logf("%s: estimated cost of all rules %d (limit %d)", name, total, staticEstimatedCRDCostLimit)
	sv, _, err := schemavalidation.NewSchemaValidator(props)
	if err != nil {
		t.Fatal(err)
	}
	return &Validator{structural: s, schema: sv, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}
}

// The estimated costs a CRD's rules may have, each and in all
// (k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation).
const (
	staticEstimatedCostLimit    = 10_000_000
	staticEstimatedCRDCostLimit = 100_000_000
)

// checkRules compiles the rules of s and of the schemas below it, adding
// their estimated costs to total: a rule's cost times the number of times
// it may run, card (the product of the maxItems of the lists above it; nil
// when one has none: the estimate from the smallest size of the value).
func checkRules(t testing.TB, path *field.Path, s *structuralschema.Structural, dt *apiservercel.DeclType, card, total *uint64) {
	t.Helper()
	if dt == nil {
		return
	}
	results, err := cel.Compile(s, dt, celconfig.PerCallLimit, environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()), cel.NewExpressionsEnvLoader())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for i, r := range results {
		n := r.MaxCardinality
		if card != nil {
			n = *card
		}
		cost := r.MaxCost * n
		if n != 0 && cost/n != r.MaxCost {
			cost = math.MaxUint64
		}
		*total = min(*total+cost, math.MaxUint64-1)
		switch {
		case r.Error != nil:
			t.Errorf("%s: rule %q: %v", path, s.XValidations[i].Rule, r.Error)
		case cost > staticEstimatedCostLimit:
			t.Errorf("%s: rule %q: estimated cost %d (%d times %d) exceeds %d", path, s.XValidations[i].Rule, cost, r.MaxCost, n, staticEstimatedCostLimit)
		}
	}
	if s.Items != nil {
		var items *uint64
		if card != nil && s.ValueValidation != nil && s.ValueValidation.MaxItems != nil {
			items = new(*card * uint64(*s.ValueValidation.MaxItems))
		}
		checkRules(t, path.Child("items"), s.Items, dt.ElemType, items, total)
	}
	for name := range s.Properties {
		prop := s.Properties[name]
		if f, ok := dt.Fields[name]; ok {
			checkRules(t, path.Child("properties", name), &prop, f.Type, card, total)
		}
	}
}

// Validate returns the errors the API server answers a create of obj with.
func (v *Validator) Validate(obj map[string]any) field.ErrorList {
	var errs field.ErrorList
	for _, p := range pruning.PruneWithOptions(obj, v.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		errs = append(errs, field.Invalid(field.NewPath(p), nil, "unknown field"))
	}
	structuraldefaulting.Default(obj, v.structural)
	errs = append(errs, schemavalidation.ValidateCustomResource(nil, obj, v.schema)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, v.structural, obj)...)
	if len(errs) > 0 {
		return errs // the API server runs the rules only on an object the schema admits
	}
	celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}
