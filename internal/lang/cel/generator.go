package cel

import (
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// VarGenerator is the variable Kyverno's generator library reads:
// generator.Apply(namespace, objects) (and, as Kyverno 1.18 spells it,
// generator.apply) hands the objects to generate to the Generator bound
// to it (GeneratorValue) and gives true.
const VarGenerator = "generator"

// Generator receives what generator.Apply generates: objects (JSON trees)
// for namespace ("" for cluster-scoped objects). An error fails the
// expression.
type Generator interface {
	Generate(namespace string, objects []map[string]any) error
}

// generatorType is the type of the generator variable, as Kyverno names it.
var generatorType = types.NewOpaqueType("generator.Context")

// generatorVal is a Generator as a CEL value.
type generatorVal struct{ g Generator }

// GeneratorValue is the value to bind to VarGenerator (in
// lang.Activation.Vars) for an evaluation of a program compiled with
// Language.Generator.
func GeneratorValue(g Generator) any { return generatorVal{g} }

func (v generatorVal) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("generator.Context has no native form (%v)", t)
}

func (v generatorVal) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return generatorType
	}
	return types.NewErr("type conversion error from generator.Context to %s", t)
}

func (v generatorVal) Equal(o ref.Val) ref.Val {
	ov, ok := o.(generatorVal)
	return types.Bool(ok && ov == v)
}

func (v generatorVal) Type() ref.Type { return generatorType }
func (v generatorVal) Value() any     { return v.g }

// generatorLib declares generator.Apply and generator.apply.
func generatorLib() []cel.EnvOption {
	overload := func(name string) cel.FunctionOpt {
		return cel.MemberOverload("generator_"+name+"_string_list",
			[]*cel.Type{generatorType, cel.StringType, cel.ListType(cel.MapType(cel.StringType, cel.DynType))}, cel.BoolType,
			cel.FunctionBinding(applyGenerator))
	}
	return []cel.EnvOption{
		cel.Function("Apply", overload("Apply")),
		cel.Function("apply", overload("apply")),
	}
}

// applyGenerator is generator.Apply(namespace, objects).
func applyGenerator(args ...ref.Val) ref.Val {
	g, ok := args[0].(generatorVal)
	if !ok || g.g == nil {
		return types.NewErr("generator.Apply: no generator is bound (%s)", args[0].Type().TypeName())
	}
	ns, ok := args[1].(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(args[1])
	}
	list, ok := args[2].(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(args[2])
	}
	tree, err := toJSON(list)
	if err != nil {
		return types.NewErr("generator.Apply: %v", err)
	}
	items, _ := tree.([]any)
	objs := make([]map[string]any, 0, len(items))
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return types.NewErr("generator.Apply: object %d is not a map", i)
		}
		objs = append(objs, m)
	}
	if err := g.g.Generate(string(ns), objs); err != nil {
		return types.NewErr("failed to generate resources: %v", err)
	}
	return types.True
}
