package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/graph"
	"github.com/modwright/modwright/internal/packs"
	"github.com/modwright/modwright/internal/value"
)

type rulesTestOptions struct {
	pack, samples, format string
}

func newRulesTestCmd(s Streams) *cobra.Command {
	o := &rulesTestOptions{}
	cmd := &cobra.Command{
		Use:   "rules-test --rule-pack DIR|oci://REF [--samples DIR] [-o text|json]",
		Short: "Run a Rego rule pack on sample objects, as KubeAtlas' rules-test does",
		Long: `rules-test loads a Rego rule pack written for KubeAtlas' rego_api v1 contract
(a directory with metadata.yaml and .rego modules, or an OCI artifact pulled
from oci://REGISTRY/REPOSITORY:SEMVER as kubeatlas-rules publishes them, with
Docker's credentials; docs/rule-packs.md), checks
it as the operator does (rego_api v1, its kubeatlas constraint against the
contract modwright satisfies, every module compiled), and derives the edges of
each sample (--samples, default the pack's samples/ directory, required for an
OCI pack; .yaml, .yml,
.json; the first document of each file), through the modules its group and
kind route to.

Exit status: 0 when every sample produced at least one edge; 1 for a usage
error or a pack that does not load; 2 when a sample produced no edge or an
error.`,
		Example: `  modwright rules-test --rule-pack examples/rule-packs/config-bundles
  modwright rules-test --rule-pack examples/rule-packs/config-bundles --samples examples/rule-packs/config-bundles/samples -o json
  modwright rules-test --rule-pack builtin:openshift --samples internal/packs/builtin/openshift/samples`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRulesTest(cmd.Context(), o, s) },
	}
	f := cmd.Flags()
	f.StringVar(&o.pack, "rule-pack", "", "the pack: a directory, or oci://REGISTRY/REPOSITORY:SEMVER (with --samples; --pack is an alias)")
	f.StringVar(&o.samples, "samples", "", "the sample objects: a directory (default: the pack's samples/)")
	f.StringVarP(&o.format, "output", "o", "text", "report format: text or json (--format is an alias)")
	aliasFlags(f, map[string]string{"format": "output", "pack": "rule-pack"})
	return cmd
}

type rulesTestSample struct {
	File  string       `json:"file"`
	Edges []packs.Edge `json:"edges"`
	Error string       `json:"error,omitempty"`
}

type rulesTestReport struct {
	Pack    string            `json:"pack"`
	Version string            `json:"version"`
	Samples []rulesTestSample `json:"samples"`
}

func runRulesTest(ctx context.Context, o *rulesTestOptions, s Streams) error {
	if ctx == nil {
		ctx = context.Background()
	}
	switch {
	case o.pack == "":
		return &ExitError{Code: 1, Err: fmt.Errorf("--rule-pack is required")}
	case (strings.HasPrefix(o.pack, "oci://") || strings.HasPrefix(o.pack, "builtin:")) && o.samples == "":
		return &ExitError{Code: 1, Err: fmt.Errorf("--rule-pack %s: an OCI or embedded pack has no samples directory: give --samples DIR", o.pack)}
	case o.format != "text" && o.format != "json":
		return &ExitError{Code: 1, Err: fmt.Errorf("--output must be text or json, not %q", o.format)}
	}
	pack, err := packs.Load(ctx, o.pack, packs.KubeAtlasVersion, 0, packs.OCIOptions{})
	if err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	dir := o.samples
	if dir == "" {
		dir = filepath.Join(o.pack, "samples")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return &ExitError{Code: 1, Err: fmt.Errorf("samples: %w", err)}
	}
	router := packs.NewRouter(pack)
	rep := rulesTestReport{Pack: pack.Name, Version: pack.Version, Samples: []rulesTestSample{}}
	failed := 0
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || ext != ".yaml" && ext != ".yml" && ext != ".json" {
			continue
		}
		rel := filepath.ToSlash(filepath.Join(filepath.Base(dir), e.Name()))
		sample := rulesTestSample{File: rel, Edges: []packs.Edge{}}
		if edges, err := deriveSample(ctx, router, filepath.Join(dir, e.Name())); err != nil {
			sample.Error = err.Error()
		} else {
			sample.Edges = edges
		}
		if sample.Error != "" || len(sample.Edges) == 0 {
			failed++
		}
		rep.Samples = append(rep.Samples, sample)
	}
	sort.Slice(rep.Samples, func(i, j int) bool { return rep.Samples[i].File < rep.Samples[j].File })
	if o.format == "json" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(s.Out, string(b))
	} else {
		printRulesTest(s, &rep, failed)
	}
	if failed > 0 || len(rep.Samples) == 0 {
		return &ExitError{Code: 2}
	}
	return nil
}

// deriveSample derives the edges of a sample file's first document.
func deriveSample(ctx context.Context, router *packs.Router, path string) ([]packs.Edge, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	first, _, _ := strings.Cut(string(data), "\n---")
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(first), &obj); err != nil {
		return nil, err
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	tree, err := value.Decode(b)
	if err != nil {
		return nil, err
	}
	m, ok := tree.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not an object")
	}
	edges, errs := router.Derive(ctx, m)
	if len(errs) > 0 {
		return edges, errs[0]
	}
	return edges, nil
}

func printRulesTest(s Streams, rep *rulesTestReport, failed int) {
	fmt.Fprintf(s.Out, "pack %s %s\n", rep.Pack, rep.Version)
	edges := 0
	for _, smp := range rep.Samples {
		switch {
		case smp.Error != "":
			fmt.Fprintf(s.Out, "FAIL %s: %s\n", smp.File, smp.Error)
		case len(smp.Edges) == 0:
			fmt.Fprintf(s.Out, "FAIL %s: no edge\n", smp.File)
		default:
			fmt.Fprintf(s.Out, "ok   %s: %d edge(s)\n", smp.File, len(smp.Edges))
		}
		for _, e := range smp.Edges {
			fmt.Fprintf(s.Out, "       %s %s -> %s%s\n", e.Type, refText(e.From), refText(e.To), attrText(e.Attributes))
		}
		edges += len(smp.Edges)
	}
	if len(rep.Samples) == 0 {
		fmt.Fprintln(s.Out, "FAIL: no samples")
		return
	}
	fmt.Fprintf(s.Out, "%d sample(s), %d edge(s), %d failed\n", len(rep.Samples), edges, failed)
}

func refText(r packs.Ref) string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// attrText is an edge's attributes as " {k=v, ...}" (sorted), "" without.
func attrText(a graph.Attributes) string {
	m := a.Map()
	if len(m) == 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return " {" + strings.Join(parts, ", ") + "}"
}
