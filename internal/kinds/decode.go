package kinds

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	sigsjson "sigs.k8s.io/json"

	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/value"
)

// Decode decodes a manifest strictly into out (a pointer to the kind's Go
// type): an apiVersion other than apiVersion, unknown or duplicate fields
// and values of the wrong type are a *rules.CompileError naming the kind,
// the rule and each field (with its indices).
func Decode(m *Manifest, kind, apiVersion string, out any) error {
	if err := Served(m, kind, apiVersion); err != nil {
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(m.JSON, out)
	if err != nil {
		return DecodeError(m, kind, reflect.TypeOf(out).Elem(), err)
	}
	if len(strict) == 0 {
		return nil
	}
	ce := &rules.CompileError{Kind: kind, Rule: m.Key(), Undecodable: true}
	for _, e := range strict {
		fe := rules.FieldError{Field: "(root)", Pos: -1, Msg: e.Error()}
		if f, ok := e.(interface{ FieldPath() string }); ok && f.FieldPath() != "" {
			// "unknown field \"spec.x\"": the field, then what it is.
			fe.Field = f.FieldPath()
			fe.Msg = strings.TrimSpace(strings.TrimSuffix(e.Error(), strconv.Quote(f.FieldPath())))
		}
		ce.Errors = append(ce.Errors, fe)
	}
	return ce
}

// Served is the error of a manifest whose apiVersion is not apiVersion,
// the one its kind serves (a *rules.CompileError on field apiVersion).
func Served(m *Manifest, kind, apiVersion string) error {
	if av := m.APIVersion(); av != apiVersion {
		return &rules.CompileError{Kind: kind, Rule: m.Key(), Undecodable: true, Errors: []rules.FieldError{{Field: "apiVersion", Pos: -1,
			Msg: fmt.Sprintf("%q is not served; use %s", av, apiVersion)}}}
	}
	return nil
}

// DecodeError is a decoding error of manifest m into a value of Go type t
// as a *rules.CompileError: encoding/json names the Go struct and type;
// this names the manifest's field, with its indices, and what it must be.
func DecodeError(m *Manifest, kind string, t reflect.Type, err error) error {
	fe := rules.FieldError{Field: "(root)", Pos: -1, Msg: err.Error()}
	if mm := value.FindMismatch(m.Object, t); mm != nil {
		fe.Field = mm.Path
		fe.Msg = strings.TrimPrefix(mm.Error(), mm.Path+" ")
	}
	return &rules.CompileError{Kind: kind, Rule: m.Key(), Undecodable: true, Errors: []rules.FieldError{fe}}
}
