package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/graph"
	"github.com/modwright/modwright/internal/testtool"
)

func TestGraphCmd(t *testing.T) {
	root := testtool.RepoRoot(t)
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := ExecuteContext(context.Background(), append([]string{"graph"}, args...), Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
		return code, out.String(), errb.String()
	}
	code, out, errs := run("-f", filepath.Join(root, "examples", "graph"), "--pack", filepath.Join(root, "examples", "rule-packs", "config-bundles"), "-o", "json")
	var g struct {
		Edges []graph.Edge `json:"edges"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &g) != nil {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	types := map[string]int{}
	for _, e := range g.Edges {
		types[e.Type]++
	}
	for typ, n := range map[string]int{"ATTACHED_TO": 1, "MOUNTS_VOLUME": 2, "OWNS": 1, "ROUTES_TO": 1, "SELECTS": 2, "USES_CONFIGMAP": 3, "USES_SECRET": 2, "USES_SERVICEACCOUNT": 2} {
		if types[typ] != n {
			t.Errorf("%d %s edges, want %d (%v)", types[typ], typ, n, types)
		}
	}
	if code, _, _ := run("-o", "json"); code != 2 {
		t.Errorf("no -f: exit %d", code)
	}
	if code, _, _ := run("-f", filepath.Join(root, "examples", "graph"), "-o", "yaml"); code != 2 {
		t.Errorf("-o yaml: exit %d", code)
	}
}
