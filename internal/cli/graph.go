package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/modwright/modwright/internal/graph"
	"github.com/modwright/modwright/internal/packs"
	"github.com/modwright/modwright/internal/source"
)

type graphOptions struct {
	files  []string
	packs  []string
	output string
}

func newGraphCmd(s Streams) *cobra.Command {
	o := &graphOptions{}
	cmd := &cobra.Command{
		Use:   "graph -f PATH [-f PATH]... [--rule-pack DIR|oci://REF]... [-o text|json|dot]",
		Short: "Print the relationship graph of a set of objects",
		Long: `graph builds the relationship graph of the objects in -f (files or directories,
recursive; "-" reads standard input; a dump of cluster state, say) as the
operator builds it: the built-in edges (docs/graph.md: ownership, the
ConfigMaps, Secrets, claims and service account a pod spec uses, an Ingress's
Services, a claim's volume, the Pods a Service or a workload selects) and the
edges the Rego rule packs given with --rule-pack derive (a directory, oci://REF or
builtin:openshift; docs/rule-packs.md).

Output: text (one edge a line), json ({"edges": [...]}) or dot (Graphviz).`,
		Example: `  modwright graph -f examples/graph
  modwright graph -f examples/graph --rule-pack examples/rule-packs/config-bundles -o dot`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runGraph(cmd.Context(), o, s) },
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil, "objects: file, directory or - (repeatable)")
	f.StringArrayVar(&o.packs, "rule-pack", nil, "a Rego rule pack: a directory or oci://REF (repeatable; --pack is an alias)")
	aliasFlags(f, map[string]string{"pack": "rule-pack"})
	f.StringVarP(&o.output, "output", "o", "text", "output format: text, json or dot")
	return cmd
}

func runGraph(ctx context.Context, o *graphOptions, s Streams) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(o.files) == 0 {
		return usageError("-f is required")
	}
	if o.output != "text" && o.output != "json" && o.output != "dot" {
		return usageError("-o must be text, json or dot, not %q", o.output)
	}
	var loaded []*packs.Pack
	for _, dir := range o.packs {
		p, err := packs.Load(ctx, dir, packs.KubeAtlasVersion, 0, packs.OCIOptions{})
		if err != nil {
			return &ExitError{Code: 2, Err: err}
		}
		loaded = append(loaded, p)
	}
	docs, err := source.ReadPaths(o.files, s.In)
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	objs := make([]map[string]any, 0, len(docs))
	for _, d := range docs {
		objs = append(objs, d.Object)
	}
	var derive graph.Deriver
	var failures []string
	if len(loaded) > 0 {
		router := packs.NewRouter(loaded...)
		derive = func(obj map[string]any) []graph.Edge {
			edges, errs := router.Derive(ctx, obj)
			for _, err := range errs {
				failures = append(failures, err.Error())
			}
			return edges
		}
	}
	g := graph.Build(objs, derive)
	for _, f := range failures {
		fmt.Fprintln(s.Err, "warning: "+f)
	}
	edges := g.Edges()
	switch o.output {
	case "json":
		if edges == nil {
			edges = []graph.Edge{}
		}
		b, err := json.MarshalIndent(map[string]any{"edges": edges}, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(s.Out, string(b))
	case "dot":
		fmt.Fprintln(s.Out, "digraph modwright {")
		for _, e := range edges {
			fmt.Fprintf(s.Out, "  %s -> %s [label=%s];\n", strconv.Quote(refText(e.From)), strconv.Quote(refText(e.To)), strconv.Quote(e.Type+attrText(e.Attributes)))
		}
		fmt.Fprintln(s.Out, "}")
	default:
		var b strings.Builder
		for _, e := range edges {
			fmt.Fprintf(&b, "%s %s -> %s%s\n", e.Type, refText(e.From), refText(e.To), attrText(e.Attributes))
		}
		fmt.Fprint(s.Out, b.String())
	}
	return nil
}
