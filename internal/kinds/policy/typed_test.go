package policy_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/crdschema"
	"github.com/modwright/modwright/internal/engine"
	"github.com/modwright/modwright/internal/rules"
)

var _ engine.SchemaReader = (*crdschema.Set)(nil)

const widget = `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: team-a, labels: {tier: gold}}
spec:
  size: small
  x-mode: fast
  ports: [{name: http, port: 8080}, {name: admin, port: 9090}]
  tags: [a, b]
`

// TestScopeTypedByCRD checks that a scoped CEL validation on a kind whose
// CRD the engine knows sees self as the API server's CRD rule at that
// place does (escaped property names, set and map lists, the root's
// metadata), and the JSON value without it.
func TestScopeTypedByCRD(t *testing.T) {
	b, err := os.ReadFile("../../../testdata/crd/widgets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crds := crdschema.NewSet()
	if err := crds.Add(context.Background(), decode(t, string(b))); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		op           rules.Operation
		old          string
		scope, cel   string
		typed, plain []string // rejections with and without the CRD
	}{{
		name:  "escaped property name",
		scope: "$.spec", cel: "has(self.x__dash__mode)",
		plain: []string{"no"},
	}, {
		// Read by index, the JSON name is found at run time (the API
		// server's type-check refuses it: lint --crd does).
		name:  "the JSON name by index",
		scope: "$.spec", cel: "self['x-mode'] == 'fast'",
	}, {
		name:  "a set list compares as a set",
		scope: "$.spec.tags", cel: "self == ['b', 'a']",
		plain: []string{"no"},
	}, {
		name: "a map list on UPDATE: reordered is unchanged",
		op:   rules.Update, old: strings.Replace(widget, "[{name: http, port: 8080}, {name: admin, port: 9090}]", "[{name: admin, port: 9090}, {name: http, port: 8080}]", 1),
		scope: "$.spec.ports", cel: "self == oldSelf",
		plain: []string{"no"},
	}, {
		name:  "each item of a map list",
		scope: "$.spec.ports[*]", cel: "self.port > 8080",
		typed: []string{"no"}, plain: []string{"no"},
	}, {
		name:  "the root's metadata as a CRD rule sees it",
		scope: "$", cel: "!has(self.metadata.labels) && self.metadata.name == 'w'",
		plain: []string{"no"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap := load(t, policyYAML("ModwrightPolicy", "team-a", "match: {resources: [{kinds: [Widget]}]}\nvalidations: [{scope: '"+tt.scope+"', cel: \""+tt.cel+"\", message: 'no'}]"))
			op := tt.op
			if op == "" {
				op = rules.Create
			}
			req := engine.Request{Operation: op, Namespace: "team-a", Object: decode(t, widget), OldObject: decode(t, tt.old)}
			for _, c := range []struct {
				schemas engine.SchemaReader
				want    []string
			}{{crds, tt.typed}, {nil, tt.plain}} {
				dec, err := engine.New(engine.Options{Schemas: c.schemas}).Evaluate(context.Background(), snap, req)
				var got []string
				switch {
				case err != nil:
					got = []string{"error"}
				default:
					for _, r := range dec.Rejections {
						got = append(got, r.Message)
					}
				}
				if diff := cmp.Diff(c.want, got); diff != "" {
					t.Errorf("with CRD %v: (-want +got)\n%s", c.schemas != nil, diff)
				}
			}
		})
	}
}
