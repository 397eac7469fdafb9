package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// versionInfo is what `modwright version` prints.
type versionInfo struct {
	Version   string     `json:"version"`
	Commit    string     `json:"commit,omitempty"`
	Modified  bool       `json:"modified,omitempty"`
	GoVersion string     `json:"goVersion"`
	Engines   []embedded `json:"engines"`
}

// embedded is one embedded engine and the module it comes from.
type embedded struct {
	Name    string `json:"name"`
	Module  string `json:"module"`
	Version string `json:"version"`
}

// engineModules are the engines modwright embeds, by module.
var engineModules = []embedded{
	{Name: "CEL", Module: "github.com/google/cel-go"},
	{Name: "Rego (OPA)", Module: "github.com/open-policy-agent/opa"},
	{Name: "CUE", Module: "cuelang.org/go"},
	{Name: "JMESPath", Module: "github.com/jmespath-community/go-jmespath"},
	{Name: "Kubernetes API server", Module: "k8s.io/apiserver"},
	{Name: "Kubernetes client", Module: "k8s.io/client-go"},
}

// readVersion is the binary's version from its build information: the
// module version (a release tag, or (devel) in a source build), the VCS
// commit, and the versions of the engines it embeds.
func readVersion() versionInfo {
	v := versionInfo{Version: "(unknown)"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.GoVersion = bi.GoVersion
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	for _, e := range engineModules {
		for _, d := range bi.Deps {
			if d.Path == e.Module {
				if d.Replace != nil {
					d = d.Replace
				}
				e.Version = d.Version
				v.Engines = append(v.Engines, e)
				break
			}
		}
	}
	return v
}

// text is the version as `modwright --version` prints it.
func (v versionInfo) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "modwright %s", v.Version)
	if v.Commit != "" {
		fmt.Fprintf(&b, " (commit %s", v.Commit)
		if v.Modified {
			b.WriteString(", modified")
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ", built with %s\n", v.GoVersion)
	for _, e := range v.Engines {
		fmt.Fprintf(&b, "  %-22s %s %s\n", e.Name, e.Module, e.Version)
	}
	return b.String()
}

func newVersionCmd(s Streams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version [-o text|yaml|json]",
		Short: "Print modwright's version, commit and the versions of the engines it embeds",
		Example: `  modwright version
  modwright version -o json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return printVersion(s.Out, output) },
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, yaml or json")
	return cmd
}

func printVersion(w io.Writer, output string) error {
	v := readVersion()
	switch output {
	case "text":
		_, err := io.WriteString(w, v.text())
		return err
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return usageError("--output must be text, yaml or json, not %q", output)
}
