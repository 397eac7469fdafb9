package testtool

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/modwright/modwright/internal/engine"
)

// FieldObjects are n Deployments (in namespace team-a) whose metadata,
// labels and the labels' (team, app, tier, zone) and name's values take
// every shape: missing, null, of another type, strings that rules test
// for (web, api, x, nobody, a, b, ""), others, and one over 64 KiB: what
// the tests of the kernel's engine.Field decisions give to rules whose
// Match the kernel decides.
func FieldObjects(rnd *rand.Rand, n int) []map[string]any {
	pick := func(vals ...any) any { return vals[rnd.IntN(len(vals))] }
	long := strings.Repeat("x", 70<<10) // over the kernel's bound: one, shared
	str := func() any {
		return pick("web", "api", "x", "nobody", "a", "b", "", "other", nil, int64(1), true, []any{"x"}, map[string]any{"x": "x"}, long)
	}
	var out []map[string]any
	for range n {
		obj := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{"replicas": int64(rnd.IntN(3))}}
		switch rnd.IntN(10) {
		case 0: // no metadata
		case 1:
			obj["metadata"] = pick(nil, "text", []any{})
		default:
			md := map[string]any{"namespace": "team-a"}
			if v := str(); rnd.IntN(4) > 0 {
				md["name"] = v
			}
			switch rnd.IntN(8) {
			case 0: // no labels
			case 1:
				md["labels"] = pick(nil, "text", []any{"team"})
			default:
				labels := map[string]any{}
				for _, k := range []string{"team", "app", "tier", "zone"} {
					if rnd.IntN(3) > 0 {
						labels[k] = str()
					}
				}
				md["labels"] = labels
			}
			obj["metadata"] = md
		}
		out = append(out, obj)
	}
	return out
}

// Says is what a decision (or the evaluation's error) says, without its
// trace: its rejections and its errors. Tests of the kernel's Field
// decisions compare it with and without a trace.
func Says(d *engine.Decision, err error) []string {
	if err != nil || d == nil {
		return []string{fmt.Sprint("failed ", err)}
	}
	var out []string
	for _, r := range d.Rejections {
		out = append(out, "reject "+r.Message)
	}
	for _, e := range d.Errors {
		out = append(out, "error "+e.Error())
	}
	return out
}
