package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/modwright/modwright/internal/crdschema"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/source"
)

type validateOptions struct {
	files     []string
	crds      []string
	operation string
	old       string
	namespace string
}

func newValidateCmd(s Streams) *cobra.Command {
	o := &validateOptions{}
	cmd := &cobra.Command{
		Use:   "validate -f PATH --crd PATH [--operation UPDATE --old PATH]",
		Short: "Check custom resources against their CRDs as the kube-apiserver does",
		Long: `validate checks objects (-f, files or directories; "-" reads standard input)
against the CustomResourceDefinitions given with --crd (files or directories,
repeatable) exactly as the kube-apiserver of modwright's Kubernetes version
checks a create (or, with --operation UPDATE and --old, an update): each CRD
as its creation is checked; each object defaulted and pruned, then its type
and object metadata, the version's OpenAPI schema, list types, embedded
resources and every x-kubernetes-validations CEL rule (transition rules with
oldSelf and ratcheting on UPDATE); unknown fields are errors, as kubectl's
strict field validation makes them. No rule of any kind runs: see apply.

Errors are printed as the API server words them, after the object:
  invalid: -f w.yaml, document 1: Widget default/w: Widget.example.com "w" is invalid: spec.size: ...
An object whose kind no --crd serves is reported as not checked.

Exit status: 0 every object valid; 1 an object is invalid; 2 bad input (an
unreadable path, an invalid CRD, a missing old object).`,
		Example: `  modwright validate -f testdata/cli/validate/widget.yaml --crd testdata/crd/widgets.yaml
  modwright validate -f testdata/cli/validate/widget-v2.yaml --crd testdata/crd --operation UPDATE --old testdata/cli/validate/widget-v1.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runValidate(cmd.Context(), o, s) },
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil, "objects to check: a file, a directory or - (repeatable)")
	f.StringArrayVar(&o.crds, "crd", nil, "CustomResourceDefinitions: a file or a directory (repeatable)")
	f.StringVar(&o.operation, "operation", "CREATE", "CREATE or UPDATE")
	f.StringVar(&o.old, "old", "", "the old objects of an UPDATE (a file or -), paired by apiVersion, kind, namespace and name")
	f.StringVarP(&o.namespace, "namespace", "n", "default", "the namespace of namespaced objects that name none")
	return cmd
}

func runValidate(ctx context.Context, o *validateOptions, s Streams) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(o.files) == 0 || len(o.crds) == 0 {
		return usageError("-f and --crd are required")
	}
	op, err := parseOperation(o.operation)
	if err != nil {
		return err
	}
	if op != rules.Create && op != rules.Update {
		return usageError("--operation must be CREATE or UPDATE, not %s", o.operation)
	}
	if err := checkOld(o.old, op); err != nil {
		return err
	}
	var old []string
	if o.old != "" {
		old = []string{o.old}
	}
	if err := checkStdin(o.crds, o.files, old, nil); err != nil {
		return err
	}
	set, err := loadCRDs(ctx, o.crds, s)
	if err != nil {
		return err
	}
	objs, err := source.ReadPaths(o.files, s.In)
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	var olds []*source.Document
	if old != nil {
		docs, err := source.ReadPaths(old, s.In)
		if err != nil {
			return &ExitError{Code: 2, Err: err}
		}
		if olds, err = pairOld(objs, docs, o.namespace); err != nil {
			return &ExitError{Code: 2, Err: err}
		}
	}
	invalid := 0
	for i := range objs {
		d := &objs[i]
		a := newAdmission(d.Object, o.namespace)
		av, _ := d.Object["apiVersion"].(string)
		v := set.For(av, a.kind)
		if v == nil {
			fmt.Fprintf(s.Err, "not checked: %s: %s: no --crd serves %s %s\n", d.Origin, a, av, a.kind)
			continue
		}
		var oldObj map[string]any
		if olds != nil {
			oldObj = olds[i].Object
		}
		res := v.Validate(ctx, d.Object, oldObj, o.namespace)
		if err := res.Err(v); err != nil {
			invalid++
			fmt.Fprintf(s.Err, "invalid: %s: %s: %v\n", d.Origin, a, err)
			continue
		}
		// What the API server adds to its answer (kubectl prints Warning:).
		for _, w := range res.Warnings {
			fmt.Fprintf(s.Err, "warning: %s: %s: %s\n", d.Origin, a, w)
		}
		fmt.Fprintf(s.Out, "valid: %s: %s\n", d.Origin, a)
	}
	if invalid > 0 {
		return &ExitError{Code: 1}
	}
	return nil
}

// loadCRDs reads the CustomResourceDefinitions of paths; an invalid one
// is an exit-2 error, another kind of document a warning.
func loadCRDs(ctx context.Context, paths []string, s Streams) (*crdschema.Set, error) {
	docs, err := source.ReadPaths(paths, s.In)
	if err != nil {
		return nil, &ExitError{Code: 2, Err: err}
	}
	set := crdschema.NewSet()
	for _, d := range docs {
		if d.Kind() != "CustomResourceDefinition" {
			fmt.Fprintf(s.Err, "warning: %s: a %s is not a CustomResourceDefinition; ignored\n", d.Origin, d.Kind())
			continue
		}
		if err := set.Add(ctx, d.Object); err != nil {
			return nil, &ExitError{Code: 2, Err: fmt.Errorf("%s: %w", d.Origin, err)}
		}
	}
	return set, nil
}
