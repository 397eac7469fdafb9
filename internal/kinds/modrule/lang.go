package modrule

import (
	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/gotemplate"
	"github.com/modwright/modwright/internal/lang/jsonpath"
)

// ModRule's two languages, compiled through the language seam: KubeMod's
// JSONPath for select (the object is $), Go templates with Sprig for patch
// values and the reject message (KubeMod's context: .Target, .Namespace,
// .SelectedItem, .SelectKeyParts).

// selectEnv is the environment of every select expression.
func selectEnv() *lang.Env {
	return &lang.Env{Name: "kubemod.select", Vars: []lang.Var{{Name: jsonpath.VarObject, Doc: "the object under evaluation, with syntheticRefs"}}}
}

// templateEnv is the environment of a template in field (the template's
// name in its errors).
func templateEnv(field string) *lang.Env {
	return &lang.Env{Name: field, Vars: []lang.Var{
		{Name: gotemplate.VarTarget, Doc: "the object under evaluation, with syntheticRefs"},
		{Name: gotemplate.VarNamespace, Doc: "the object's namespace"},
		{Name: gotemplate.VarSelectedItem, Doc: "the element the patch item's select picked"},
		{Name: gotemplate.VarSelectKeyParts, Doc: "the keys its capturing steps went through (.#N)"},
	}}
}

// compileSelect compiles a select expression; the error is a
// *lang.Diagnostic.
func compileSelect(src string) (lang.Query, error) {
	q, diags := jsonpath.Language{}.CompileQuery(selectEnv(), src)
	if len(diags) > 0 {
		return nil, &diags[0]
	}
	return q, nil
}

// compileTemplate compiles a template; the error is a *lang.Diagnostic.
func compileTemplate(field, src string) (lang.Text, error) {
	t, diags := gotemplate.Language{}.CompileText(templateEnv(field), src)
	if len(diags) > 0 {
		return nil, &diags[0]
	}
	return t, nil
}

// parseValue turns a value's text into the JSON value it denotes (YAML as
// kubectl reads it).
func parseValue(text string) (any, error) { return gotemplate.ParseValue(text) }
