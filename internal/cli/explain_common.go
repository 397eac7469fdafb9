package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/kinds"
	"github.com/modwright/modwright/internal/packs"
	"github.com/modwright/modwright/internal/rules"
	"github.com/modwright/modwright/internal/runner"
	"github.com/modwright/modwright/internal/source"
)

// Helpers shared by apply, test, explain, lint and krm.

// parseOperation checks an --operation value.
func parseOperation(s string) (rules.Operation, error) {
	op := rules.Operation(strings.ToUpper(s))
	if op != rules.Create && op != rules.Update && op != rules.Delete && op != rules.Connect {
		return "", usageError("--operation must be CREATE, UPDATE, DELETE or CONNECT, not %q", s)
	}
	return op, nil
}

// admission is one object to evaluate and the namespace it is admitted in.
type admission struct {
	obj  map[string]any
	old  map[string]any // the old object of an UPDATE; nil for none
	kind string
	ns   string // "" for cluster-scoped kinds
	name string
	user engine.UserInfo // the requester (a UserInfo context document)
}

// newAdmission takes a namespaced object without a namespace to be in
// defaultNS, as apply does.
func newAdmission(obj map[string]any, defaultNS string) admission {
	obj = kinds.AsDecoded(obj)
	a := admission{obj: obj}
	a.kind, _ = obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	a.ns, _ = md["namespace"].(string)
	a.name, _ = md["name"].(string)
	if a.ns == "" && !kinds.IsClusterScoped(a.kind) {
		a.ns = defaultNS
	}
	return a
}

// String names the object as apply's messages do: Kind ns/name.
func (a admission) String() string {
	if a.ns == "" {
		return a.kind + " " + a.name
	}
	return a.kind + " " + a.ns + "/" + a.name
}

// request is a's admission by op as the runner takes it.
func (a admission) request(op rules.Operation) runner.Request {
	return runner.Request{Operation: op, Namespace: a.ns, Object: a.obj, Old: a.old, User: a.user}
}

// resolverFor reads context objects into an ObjectReader, with the edges
// of the rule packs in packDirs in their graph; nil when there are
// neither. Objects without kind or name are reported as warnings.
func resolverFor(paths []string, s Streams, packDirs ...string) (engine.ObjectReader, error) {
	if len(paths) == 0 && len(packDirs) == 0 {
		return nil, nil
	}
	var docs []source.Document
	if len(paths) > 0 {
		var err error
		if docs, err = source.ReadPaths(paths, s.In); err != nil {
			return nil, &ExitError{Code: 2, Err: err}
		}
	}
	r, ignored, err := newStaticResolver(docs)
	if err != nil {
		return nil, &ExitError{Code: 2, Err: err}
	}
	var loaded []*packs.Pack
	for _, dir := range packDirs {
		p, err := packs.Load(context.Background(), dir, packs.KubeAtlasVersion, 0, packs.OCIOptions{})
		if err != nil {
			return nil, &ExitError{Code: 2, Err: err}
		}
		loaded = append(loaded, p)
	}
	if len(loaded) > 0 {
		r.packs = packs.NewRouter(loaded...)
	}
	for _, w := range ignored {
		fmt.Fprintln(s.Err, "warning:", w)
	}
	return r, nil
}

// toYAML renders a value as YAML text.
func toYAML(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

// isTerminal reports whether w is a terminal (for colour), honouring
// NO_COLOR.
func isTerminal(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// checkStdin allows standard input (-) to be named once at most.
func checkStdin(lists ...[]string) error {
	used := false
	for _, l := range lists {
		for _, p := range l {
			if p != "-" {
				continue
			}
			if used {
				return usageError("standard input (-) can be read only once")
			}
			used = true
		}
	}
	return nil
}
