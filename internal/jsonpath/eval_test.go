package jsonpath

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/value"
)

const podJSON = `{
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {
    "name": "web",
    "namespace": "prod",
    "labels": {"app": "nginx", "color": "blue", "app.kubernetes.io/name": "web"},
    "annotations": {}
  },
  "spec": {
    "replicas": 3,
    "containers": [
      {"name": "nginx", "image": "nginx:1.14.2",
       "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443}],
       "securityContext": {"runAsNonRoot": true}},
      {"name": "sidecar", "image": "envoy:1.20", "ports": [{"containerPort": 9090}], "securityContext": {}},
      {"name": "logger", "image": "fluentd:v1", "resources": null}
    ],
    "externalIPs": ["123.12.34.5", "10.0.0.1"],
    "tags": ["a", "b", "c", "d", "e"],
    "nums": [1, 2.5, -3, 1e2],
    "empty": "",
    "emptyList": [],
    "flag": false,
    "nothing": null
  }
}`

// deployJSON has no externalIPs and nests containers in a pod template.
const deployJSON = `{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {"name": "api", "labels": {"app": "api"}},
  "spec": {
    "replicas": 2,
    "template": {
      "metadata": {"labels": {"app": "api"}},
      "spec": {
        "containers": [
          {"name": "api", "image": "api:2"},
          {"name": "proxy", "image": "nginx:1.14.0", "securityContext": {"runAsNonRoot": false}},
          {"name": "init", "image": "busybox", "securityContext": {}}
        ]
      }
    }
  }
}`

var docs = map[string]string{"pod": podJSON, "deploy": deployJSON, "small": `{"a":[1,{"b":2}],"c":"x"}`}

func decode(t testing.TB, src string) any {
	t.Helper()
	v, err := value.Decode([]byte(src))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return v
}

type n = json.Number

func obj(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// evalCases are evaluated against docs[doc] ("pod" when empty). A nil want
// means no value.
var evalCases = []struct {
	expr string
	doc  string
	want []any
}{
	// name and index steps
	{`$.kind`, "", []any{"Pod"}},
	{`@.kind`, "", []any{"Pod"}},
	{`$['kind']`, "", []any{"Pod"}},
	{`$.metadata.labels["app.kubernetes.io/name"]`, "", []any{"web"}},
	{`$.spec.containers[0].name`, "", []any{"nginx"}},
	{`$.spec.containers[-1].name`, "", []any{"logger"}},
	{`$.spec.containers[-3].name`, "", []any{"nginx"}},
	{`$.spec.containers[3]`, "", nil},
	{`$.spec.containers[-4]`, "", nil},
	{`$.kind.x`, "", nil},
	{`$.spec[0]`, "", nil},
	{`$.missing.deeper`, "", nil},
	{`$.spec.nothing`, "", []any{nil}},
	{`$.spec.nothing.x`, "", nil},
	{`$.spec.emptyList`, "", []any{[]any{}}},
	// wildcards
	{`$.spec.containers[*].name`, "", []any{"nginx", "sidecar", "logger"}},
	{`$.spec.containers.*.name`, "", []any{"nginx", "sidecar", "logger"}},
	{`$.metadata.labels.*`, "", []any{"nginx", "web", "blue"}},
	{`$.metadata.labels[*]`, "", []any{"nginx", "web", "blue"}},
	{`$.kind[*]`, "", nil},
	{`$.kind.*`, "", nil},
	{`$.spec.nothing[*]`, "", nil},
	{`$.spec.emptyList[*]`, "", nil},
	{`$.spec.containers[*].resources`, "", []any{nil}},
	{`$.spec.containers[*].ports[*].containerPort`, "", []any{n("80"), n("443"), n("9090")}},
	// slices
	{`$.spec.tags[1:3]`, "", []any{"b", "c"}},
	{`$.spec.tags[::2]`, "", []any{"a", "c", "e"}},
	{`$.spec.tags[::-1]`, "", []any{"e", "d", "c", "b", "a"}},
	{`$.spec.tags[::-2]`, "", []any{"e", "c", "a"}},
	{`$.spec.tags[-2:]`, "", []any{"d", "e"}},
	{`$.spec.tags[:-3]`, "", []any{"a", "b"}},
	{`$.spec.tags[3:1:-1]`, "", []any{"d", "c"}},
	{`$.spec.tags[1:3:-1]`, "", nil},
	{`$.spec.tags[10:]`, "", nil},
	{`$.spec.tags[:100]`, "", []any{"a", "b", "c", "d", "e"}},
	{`$.spec.tags[-100:2]`, "", []any{"a", "b"}},
	{`$.spec.tags[100::-1]`, "", []any{"e", "d", "c", "b", "a"}},
	{`$.spec.tags[-100::-1]`, "", nil},
	{`$.spec.tags[:]`, "", []any{"a", "b", "c", "d", "e"}},
	{`$.spec.tags[::9223372036854775807]`, "", []any{"a"}},
	{`$.spec.tags[::-9223372036854775808]`, "", []any{"e"}},
	{`$.spec.tags[-9223372036854775808:9223372036854775807]`, "", []any{"a", "b", "c", "d", "e"}},
	{`$.spec.tags[9223372036854775807:-9223372036854775808:-1]`, "", []any{"e", "d", "c", "b", "a"}},
	{`$.spec.emptyList[::-1]`, "", nil},
	{`$.metadata[1:]`, "", nil},
	// unions
	{`$.spec.tags[4,0,-1]`, "", []any{"e", "a", "e"}},
	{`$.spec.tags[7,1]`, "", []any{"b"}},
	{`$.metadata.labels["color","app","nope"]`, "", []any{"blue", "nginx"}},
	{`$.spec.tags["a",0]`, "", []any{"a"}},
	{`$.metadata["name",0]`, "", []any{"web"}},
	// recursive descent
	{`$..containerPort`, "", []any{n("80"), n("443"), n("9090")}},
	{`$..name`, "", []any{"web", "nginx", "sidecar", "logger"}},
	{`$..["externalIPs"][0]`, "", []any{"123.12.34.5"}},
	{`$.spec.containers..[0]`, "", []any{
		obj("name", "nginx", "image", "nginx:1.14.2",
			"ports", []any{obj("containerPort", n("80"), "protocol", "TCP"), obj("containerPort", n("443"))},
			"securityContext", obj("runAsNonRoot", true)),
		obj("containerPort", n("80"), "protocol", "TCP"),
		obj("containerPort", n("9090")),
	}},
	{`$.spec.containers[0]..*`, "", []any{
		"nginx:1.14.2", "nginx",
		[]any{obj("containerPort", n("80"), "protocol", "TCP"), obj("containerPort", n("443"))},
		obj("runAsNonRoot", true),
		obj("containerPort", n("80"), "protocol", "TCP"), obj("containerPort", n("443")),
		n("80"), "TCP", n("443"), true,
	}},
	{`$..*`, "small", []any{[]any{n("1"), obj("b", n("2"))}, "x", n("1"), obj("b", n("2")), n("2")}},
	{`$..[*]`, "small", []any{[]any{n("1"), obj("b", n("2"))}, "x", n("1"), obj("b", n("2")), n("2")}},
	{`$.c..*`, "small", nil},
	{`$.c..c`, "small", nil},
	{`$..b..*`, "small", nil},
	{`$..[?(@.containerPort == 443)]`, "", []any{obj("containerPort", n("443"))}},
	{`$..[?(@ == 2)]`, "small", []any{n("2")}},
	{`$.spec.containers..ports[?@.containerPort >= 80].containerPort`, "", []any{n("80"), n("443"), n("9090")}},
	{`$.spec.containers..ports[?@.containerPort >= 80]`, "", []any{
		obj("containerPort", n("80"), "protocol", "TCP"), obj("containerPort", n("443")), obj("containerPort", n("9090"))}},
	// filters
	{`$.spec.containers[?(@.name == "sidecar")].image`, "", []any{"envoy:1.20"}},
	{`$.spec.containers[?(@.securityContext)].name`, "", []any{"nginx", "sidecar"}},
	{`$.spec.containers[?(!@.securityContext)].name`, "", []any{"logger"}},
	{`$.spec.containers[?(@.resources)].name`, "", []any{"logger"}},
	{`$.spec.containers[?(@.ports[*])].name`, "", []any{"nginx", "sidecar"}},
	{`$.spec.containers[?(!@.ports[?(@.containerPort == 9090)])].name`, "", []any{"nginx", "logger"}},
	{`$.spec.containers[?(@.ports && @.securityContext.runAsNonRoot == true)].name`, "", []any{"nginx"}},
	{`$.spec.containers[?(@.resources || @.securityContext.runAsNonRoot)].name`, "", []any{"nginx", "logger"}},
	{`$.spec.containers[?(@.ports[?(@.containerPort > 100)])].name`, "", []any{"nginx", "sidecar"}},
	{`$.spec.containers[?(@.name == $.spec.containers[0].name)].image`, "", []any{"nginx:1.14.2"}},
	{`$.spec.containers[?(@.missing + 1)]`, "", nil},
	{`$.spec.containers[?(@.name == "nginx" || $.kind == "Pod")].name`, "", []any{"nginx", "sidecar", "logger"}},
	{`$.metadata.labels[?(@ == "blue")]`, "", []any{"blue"}},
	{`$.metadata.labels[?(@ =~ "^.*n.*$")]`, "", []any{"nginx"}},
	{`$.spec.tags[?(@ > "b")]`, "", []any{"c", "d", "e"}},
	{`$.spec.nums[?(@ >= 1)]`, "", []any{n("1"), n("2.5"), n("1e2")}},
	{`$.spec.nums[?(@ < 0)]`, "", []any{n("-3")}},
	{`$.spec.nums[?(@ % 2 == 1)]`, "", []any{n("1")}},
	{`$.kind[?(@ == "Pod")]`, "", nil},
	{`$.spec.tags[?(true)]`, "", []any{"a", "b", "c", "d", "e"}},
	{`$.spec.tags[?(false)]`, "", nil},
	{`$[?(@.name)]`, "", []any{obj("name", "web", "namespace", "prod",
		"labels", obj("app", "nginx", "color", "blue", "app.kubernetes.io/name", "web"), "annotations", obj())}},
	// KubeMod cases
	{`$.spec.containers[*].ports[? @.containerPort == 80]`, "", []any{obj("containerPort", n("80"), "protocol", "TCP")}},
	{`$.spec.containers[? @.image =~ "nginx:1\\.14\\..*"].name`, "", []any{"nginx"}},
	{`$.spec.containers[? @.image =~ "nginx:1\\.14\\..*"].name`, "deploy", nil},
	{`$.spec.template.spec.containers[? @.image =~ "nginx:1\\.14\\..*"].name`, "deploy", []any{"proxy"}},
	{`$.spec.externalIPs[?@ !~ "123\\.12\\.34\\..*"]`, "", []any{"10.0.0.1"}},
	{`$.spec.externalIPs[?@ !~ "123\\.12\\.34\\..*"]`, "deploy", nil},
	{`length($.spec.containers) > 1`, "", []any{true}},
	{`length($.spec.externalIPs) > 0`, "", []any{true}},
	{`length($.spec.externalIPs) > 0`, "deploy", []any{false}},
	{`$.spec.securityContext.runAsNonRoot == true`, "", []any{false}},
	{`$.x != 1`, "", []any{false}},
	{`$.spec.template.spec.containers[? isUndefined(@.securityContext) || isNotEmpty(@.securityContext)].name`, "deploy", []any{"api", "proxy"}},
	{`isDefined($.metadata.labels["color"])`, "", []any{true}},
	{`isDefined($.metadata.labels["color"])`, "deploy", []any{false}},
	{`length($.spec.containers[? isUndefined(@.securityContext.runAsNonRoot)])`, "", []any{int64(2)}},
	{`length($.spec.template.spec.containers[? isUndefined(@.securityContext.runAsNonRoot)])`, "deploy", []any{int64(2)}},
	// equality
	{`$.spec.replicas == 3`, "", []any{true}},
	{`$.spec.replicas == 3.0`, "", []any{true}},
	{`$.spec.replicas == 3e0`, "", []any{true}},
	{`$.spec.replicas != 3`, "", []any{false}},
	{`$.kind == "Pod"`, "", []any{true}},
	{`$.kind != "Deployment"`, "", []any{true}},
	{`$.spec.nothing == null`, "", []any{true}},
	{`null == null`, "", []any{true}},
	{`$.missing == null`, "", []any{false}},
	{`$.missing != null`, "", []any{false}},
	{`$.missing == $.missing`, "", []any{false}},
	{`"1" == 1`, "", []any{false}},
	{`"1" != 1`, "", []any{true}},
	{`true == true`, "", []any{true}},
	{`$.spec.flag == false`, "", []any{true}},
	{`$.spec.containers[*].name == "nginx"`, "", []any{false}},
	{`$.spec.containers[*].name != "nginx"`, "", []any{true}},
	{`$.spec.tags[0:2] == $.spec.tags[0,1]`, "", []any{true}},
	{`$.spec.containers[*].missing == $.spec.emptyList`, "", []any{true}},
	{`$.metadata.annotations == $.metadata.annotations`, "", []any{true}},
	// ordering
	{`$.spec.replicas < 5`, "", []any{true}},
	{`$.spec.replicas <= 3`, "", []any{true}},
	{`$.spec.replicas > 3`, "", []any{false}},
	{`$.spec.replicas >= 3`, "", []any{true}},
	{`2.5 > 2`, "", []any{true}},
	{`"abc" < "abd"`, "", []any{true}},
	{`"b" >= "a"`, "", []any{true}},
	{`"B" > "a"`, "", []any{false}},
	{`1 < "2"`, "", []any{false}},
	{`"1" < 2`, "", []any{false}},
	{`$.missing < 1`, "", []any{false}},
	{`$.missing >= 1`, "", []any{false}},
	{`1 <= $.missing`, "", []any{false}},
	{`false < true`, "", []any{false}},
	{`null <= null`, "", []any{false}},
	{`$.spec.tags < $.spec.tags`, "", []any{false}},
	// regular expressions
	{`$.kind =~ "^P"`, "", []any{true}},
	{`$.kind =~ "o"`, "", []any{true}},
	{`$.kind !~ "^P"`, "", []any{false}},
	{`$.kind !~ "^D"`, "", []any{true}},
	{`$.spec.replicas =~ "3"`, "", []any{false}},
	{`$.spec.replicas !~ "3"`, "", []any{false}},
	{`$.missing =~ "x"`, "", []any{false}},
	{`$.missing !~ "x"`, "", []any{false}},
	{`$.spec.nothing !~ "x"`, "", []any{false}},
	// arithmetic
	{`1 + 2`, "", []any{int64(3)}},
	{`$.spec.replicas * 2`, "", []any{int64(6)}},
	{`$.spec.replicas - 5`, "", []any{int64(-2)}},
	{`7 % 3`, "", []any{int64(1)}},
	{`-7 % 3`, "", []any{int64(-1)}},
	{`7 % -1`, "", []any{int64(0)}},
	{`7 / 2`, "", []any{3.5}},
	{`6 / 3`, "", []any{2.0}},
	{`1.5 + 1`, "", []any{2.5}},
	{`1.0 + 1`, "", []any{2.0}},
	{`5.5 % 2`, "", []any{1.5}},
	{`0.5 * 4`, "", []any{2.0}},
	{`2 - 3 - 4`, "", []any{int64(-5)}},
	{`2 * (3 + 4)`, "", []any{int64(14)}},
	{`2 * 3 + 4`, "", []any{int64(10)}},
	{`"a" + "b"`, "", []any{"ab"}},
	{`$.kind + "/" + $.metadata.name`, "", []any{"Pod/web"}},
	{`-1`, "", []any{n("-1")}},
	{`-1.5e3`, "", []any{n("-1.5e3")}},
	{`- -1`, "", []any{int64(1)}},
	{`-$.spec.replicas`, "", []any{int64(-3)}},
	{`-$.spec.nums[1]`, "", []any{-2.5}},
	{`9223372036854775807 + 1`, "", []any{float64(math.MaxInt64) + 1}},
	{`-9223372036854775807 - 2`, "", []any{-float64(math.MaxInt64) - 2}},
	{`9223372036854775807 * 2`, "", []any{float64(math.MaxInt64) * 2}},
	{`-(-9223372036854775807 - 1)`, "", []any{float64(math.MaxInt64) + 1}},
	{`-9223372036854775808 % -1`, "", []any{int64(0)}},
	{`-9223372036854775808 * -1`, "", []any{float64(math.MaxInt64) + 1}},
	{`99999999999999999999 + 1`, "", []any{1e20}},
	{`$.missing + 1`, "", nil},
	{`1 - $.missing`, "", nil},
	{`$.missing * "x"`, "", nil},
	{`-$.missing`, "", nil},
	{`$.missing / 0`, "", nil},
	{`($.missing + 1) == 1`, "", []any{false}},
	// logic
	{`true && false`, "", []any{false}},
	{`true && true`, "", []any{true}},
	{`false || true`, "", []any{true}},
	{`false || false`, "", []any{false}},
	{`!true`, "", []any{false}},
	{`!!true`, "", []any{true}},
	{`false && 1`, "", []any{false}},
	{`true || $.kind`, "", []any{true}},
	{`false && 1 / 0 == 1`, "", []any{false}},
	{`$.spec.flag || true`, "", []any{true}},
	{`!$.spec.flag`, "", []any{true}},
	{`$.kind == "Pod" && $.spec.replicas > 1`, "", []any{true}},
	{`$.kind == "Pod" || $.missing`, "", []any{true}},
	// functions
	{`length($.spec.containers)`, "", []any{int64(3)}},
	{`length($.metadata.labels)`, "", []any{int64(3)}},
	{`length($.kind)`, "", []any{int64(3)}},
	{`length("héllo")`, "", []any{int64(5)}},
	{`length("")`, "", []any{int64(0)}},
	{`length(null)`, "", []any{int64(0)}},
	{`length($.spec.nothing)`, "", []any{int64(0)}},
	{`length($.missing)`, "", []any{int64(0)}},
	{`length($.spec.emptyList)`, "", []any{int64(0)}},
	{`length($.metadata.annotations)`, "", []any{int64(0)}},
	{`length($.spec.containers[*])`, "", []any{int64(3)}},
	{`length($.spec.containers[*].ports[*])`, "", []any{int64(3)}},
	{`length($.spec.containers[?(@.x)])`, "", []any{int64(0)}},
	{`length($..name)`, "", []any{int64(4)}},
	{`length($.kind + "s")`, "", []any{int64(4)}},
	{`length($.missing + "s")`, "", []any{int64(0)}},
	{`isDefined($.kind)`, "", []any{true}},
	{`isDefined($.spec.nothing)`, "", []any{true}},
	{`isDefined($.missing)`, "", []any{false}},
	{`isDefined($.spec.containers[*].missing)`, "", []any{false}},
	{`isDefined($.spec.containers[*].name)`, "", []any{true}},
	{`isDefined($.missing + 1)`, "", []any{false}},
	{`isDefined(1)`, "", []any{true}},
	{`isUndefined($.missing)`, "", []any{true}},
	{`isUndefined($.kind)`, "", []any{false}},
	{`isUndefined($.spec.containers[*].missing)`, "", []any{true}},
	{`isUndefined($.spec.containers[*])`, "", []any{false}},
	{`isEmpty($.missing)`, "", []any{true}},
	{`isEmpty($.spec.nothing)`, "", []any{true}},
	{`isEmpty($.spec.empty)`, "", []any{true}},
	{`isEmpty($.spec.emptyList)`, "", []any{true}},
	{`isEmpty($.metadata.annotations)`, "", []any{true}},
	{`isEmpty(0)`, "", []any{false}},
	{`isEmpty($.spec.flag)`, "", []any{false}},
	{`isEmpty($.kind)`, "", []any{false}},
	{`isEmpty($.spec.tags)`, "", []any{false}},
	{`isEmpty($.metadata)`, "", []any{false}},
	{`isEmpty($.spec.containers[*].missing)`, "", []any{true}},
	{`isEmpty($.spec.tags[*])`, "", []any{false}},
	{`isEmpty($.spec.containers[*].resources)`, "", []any{false}},
	{`isNotEmpty($.missing)`, "", []any{false}},
	{`isNotEmpty($.spec.empty)`, "", []any{false}},
	{`isNotEmpty($.kind)`, "", []any{true}},
	{`isNotEmpty($.spec.tags[*])`, "", []any{true}},
	{`isNotEmpty($.spec.containers[*].missing)`, "", []any{false}},
	{`isNotEmpty(false)`, "", []any{true}},
	{`!isEmpty($.spec.tags) && length($.spec.tags) == 5`, "", []any{true}},
}

func evalDoc(t testing.TB, name string) any {
	if name == "" {
		name = "pod"
	}
	return decode(t, docs[name])
}

func TestEvaluate(t *testing.T) {
	for _, tt := range evalCases {
		e, err := Parse(tt.expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.expr, err)
			continue
		}
		doc := evalDoc(t, tt.doc)
		before := value.DeepCopy(doc)
		res, err := e.Evaluate(context.Background(), doc)
		if err != nil {
			t.Errorf("Evaluate(%q) on %s: %v", tt.expr, tt.doc, err)
			continue
		}
		if diff := cmp.Diff(tt.want, res.Values); diff != "" {
			t.Errorf("Evaluate(%q) on %s: (-want +got)\n%s", tt.expr, tt.doc, diff)
		}
		if want := e.Definite() || !e.IsQuery(); res.Single != want {
			t.Errorf("Evaluate(%q).Single = %v, want %v", tt.expr, res.Single, want)
		}
		if res.Single && len(res.Values) > 1 {
			t.Errorf("Evaluate(%q): Single with %d values", tt.expr, len(res.Values))
		}
		if !value.Equal(before, doc) {
			t.Errorf("Evaluate(%q) modified the document", tt.expr)
		}
		// The canonical form evaluates identically.
		res2, err := MustParse(e.String()).Evaluate(context.Background(), doc)
		if err != nil || !cmp.Equal(res, res2) {
			t.Errorf("canonical form %q of %q evaluates to %v, %v; want %v", e.String(), tt.expr, res2, err, res)
		}
		// Select agrees with Evaluate.
		if e.IsQuery() {
			nodes, err := e.Select(context.Background(), doc)
			if err != nil {
				t.Errorf("Select(%q): %v", tt.expr, err)
				continue
			}
			var vals []any
			for _, nd := range nodes {
				vals = append(vals, nd.Value)
				if len(nd.Keys) != e.Captures() {
					t.Errorf("Select(%q): node with %d keys, want %d", tt.expr, len(nd.Keys), e.Captures())
				}
			}
			if diff := cmp.Diff(res.Values, vals); diff != "" {
				t.Errorf("Select(%q) values differ from Evaluate: (-evaluate +select)\n%s", tt.expr, diff)
			}
		}
	}
}

var evalErrorCases = []struct {
	expr string
	pos  int
	frag string
}{
	{`1 / 0`, 2, "division by zero"},
	{`1.5 / 0.0`, 4, "division by zero"},
	{`1 % 0`, 2, "modulo by zero"},
	{`1.5 % 0`, 4, "modulo by zero"},
	{`"a" + 1`, 4, "cannot apply '+' to string and number"},
	{`true + 1`, 5, "cannot apply '+' to boolean and number"},
	{`"a" * "b"`, 4, "cannot apply '*' to string and string"},
	{`$.metadata - 1`, 11, "cannot apply '-' to object and number"},
	{`$.spec.tags[*] + 1`, 15, "cannot apply '+' to array and number"},
	{`null + 1`, 5, "cannot apply '+' to null and number"},
	{`-"a"`, 0, "cannot negate a string"},
	{`-$.spec.flag`, 0, "cannot negate a boolean"},
	{`1e308 * 10`, 6, "not a finite number"},
	{`1 && true`, 2, "the left operand of '&&' must be a boolean, got number"},
	{`true && 1`, 5, "the right operand of '&&' must be a boolean, got number"},
	{`false || "x"`, 6, "the right operand of '||' must be a boolean, got string"},
	{`$.missing && true`, 10, "left operand of '&&' must be a boolean, got undefined"},
	{`$.kind && true`, 7, "left operand of '&&' must be a boolean, got string"},
	{`!1`, 0, "the operand of '!' must be a boolean, got number"},
	{`!$.missing`, 0, "got undefined"},
	{`!$.spec.tags[*]`, 0, "got array"},
	{`length($.spec.replicas)`, 0, "length of a number is undefined"},
	{`length(true)`, 0, "length of a boolean is undefined"},
	{`1 + length(1 / 0)`, 13, "division by zero"},
	{`isDefined(1 / 0)`, 12, "division by zero"},
	{`isEmpty(1 % 0)`, 10, "modulo by zero"},
	{`$.spec.containers[?(@.name + "x")]`, 17, "a filter must yield a boolean, got string"},
	{`$.spec.containers[?(@.ports + 1)]`, 28, "cannot apply '+' to array and number"},
	{`$.spec.containers[?(@.name == "nginx" && 1)]`, 38, "right operand of '&&' must be a boolean"},
	{`$.spec.containers[?(length(@.ports))]`, 17, "a filter must yield a boolean, got number"},
	{`$.spec.containers[?(length(@))]`, 17, "a filter must yield a boolean, got number"},
	{`$.spec.tags[?(length(@.x.y[0]) + "x" == 1)]`, 31, "cannot apply '+' to number and string"},
	{`$..[?(@ + 1 == 1)]`, 8, "cannot apply '+'"},
	{`$.spec.tags[?(@ + 1 == 1)]`, 16, "cannot apply '+' to string and number"},
	{`length($.spec.tags[?(@ / 0)])`, 23, "cannot apply '/' to string and number"},
	{`isDefined($.spec.tags[?(@ / 0)])`, 26, "cannot apply '/'"},
	{`isEmpty($.spec.tags[?(@ / 0)])`, 24, "cannot apply '/'"},
}

func TestEvaluateErrors(t *testing.T) {
	doc := evalDoc(t, "pod")
	for _, tt := range evalErrorCases {
		e, err := Parse(tt.expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.expr, err)
			continue
		}
		res, err := e.Evaluate(context.Background(), doc)
		if err == nil {
			t.Errorf("Evaluate(%q) = %v, want error", tt.expr, res.Values)
			continue
		}
		if !errors.Is(err, ErrEval) {
			t.Errorf("Evaluate(%q): error %v does not wrap ErrEval", tt.expr, err)
		}
		var ee *EvalError
		if !errors.As(err, &ee) {
			t.Errorf("Evaluate(%q): error %T is not an *EvalError", tt.expr, err)
			continue
		}
		if ee.Pos != tt.pos || !strings.Contains(ee.Msg, tt.frag) {
			t.Errorf("Evaluate(%q): got pos %d %q, want pos %d containing %q", tt.expr, ee.Pos, ee.Msg, tt.pos, tt.frag)
		}
		if e.IsQuery() {
			if _, err := e.Select(context.Background(), doc); !errors.Is(err, ErrEval) {
				t.Errorf("Select(%q): got %v, want an evaluation error", tt.expr, err)
			}
		}
	}
}

func TestEvalErrorText(t *testing.T) {
	_, err := MustParse(`1 / 0`).Evaluate(context.Background(), nil)
	want := "jsonpath: evaluation error at column 3: division by zero"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

func TestSelect(t *testing.T) {
	type D = Descent
	tests := []struct {
		expr string
		doc  string
		want []Node
	}{
		{`$.kind`, "", []Node{{Value: "Pod"}}},
		{`$.missing`, "", nil},
		{`$.spec.containers[*].name`, "", []Node{
			{"nginx", []any{0}}, {"sidecar", []any{1}}, {"logger", []any{2}}}},
		{`$.metadata.labels.*`, "", []Node{
			{"nginx", []any{"app"}}, {"web", []any{"app.kubernetes.io/name"}}, {"blue", []any{"color"}}}},
		{`$.spec.tags[1:3]`, "", []Node{{"b", []any{1}}, {"c", []any{2}}}},
		{`$.spec.tags[::-2]`, "", []Node{{"e", []any{4}}, {"c", []any{2}}, {"a", []any{0}}}},
		{`$.spec.tags[4,-5]`, "", []Node{{"e", []any{4}}, {"a", []any{0}}}},
		{`$.metadata.labels["color","app"]`, "", []Node{{"blue", []any{"color"}}, {"nginx", []any{"app"}}}},
		{`$.spec.containers[?(@.name == "sidecar")].image`, "", []Node{{"envoy:1.20", []any{1}}}},
		{`$.metadata.labels[?(@ == "blue")]`, "", []Node{{"blue", []any{"color"}}}},
		{`$.spec.containers[*].ports[? @.containerPort == 80]`, "", []Node{
			{obj("containerPort", n("80"), "protocol", "TCP"), []any{0, 0}}}},
		{`$.spec.containers[*].ports[? @.containerPort > 80].containerPort`, "", []Node{
			{n("443"), []any{0, 1}}, {n("9090"), []any{1, 0}}}},
		{`$..containerPort`, "", []Node{
			{n("80"), []any{D{"spec", "containers", 0, "ports", 0}}},
			{n("443"), []any{D{"spec", "containers", 0, "ports", 1}}},
			{n("9090"), []any{D{"spec", "containers", 1, "ports", 0}}}}},
		{`$.spec.containers..ports[?@.containerPort >= 80].containerPort`, "", []Node{
			{n("80"), []any{D{0}, 0}}, {n("443"), []any{D{0}, 1}}, {n("9090"), []any{D{1}, 0}}}},
		{`$..[?(@.containerPort == 9090)].containerPort`, "", []Node{
			{n("9090"), []any{D{"spec", "containers", 1, "ports"}, 0}}}},
		{`$.spec.externalIPs..[0]`, "", []Node{{"123.12.34.5", []any{D{}}}}},
		{`$..*`, "small", []Node{
			{[]any{n("1"), obj("b", n("2"))}, []any{D{}, "a"}},
			{"x", []any{D{}, "c"}},
			{n("1"), []any{D{"a"}, 0}},
			{obj("b", n("2")), []any{D{"a"}, 1}},
			{n("2"), []any{D{"a", 1}, "b"}}}},
		{`$..b..*`, "small", nil},
		{`$..a..b`, "small", []Node{{n("2"), []any{D{}, D{1}}}}},
		{`$.a[*]..b`, "small", []Node{{n("2"), []any{1, D{}}}}},
		{`$[*][?(@ == 1)]`, "small", []Node{{n("1"), []any{"a", 0}}}},
	}
	for _, tt := range tests {
		e := MustParse(tt.expr)
		got, err := e.Select(context.Background(), evalDoc(t, tt.doc))
		if err != nil {
			t.Errorf("Select(%q): %v", tt.expr, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Select(%q): (-want +got)\n%s", tt.expr, diff)
		}
	}
	if _, err := MustParse(`$.a == 1`).Select(context.Background(), nil); err != ErrNotQuery {
		t.Errorf("Select on a computed expression: got %v, want ErrNotQuery", err)
	}
}

// TestSelectKeysAreCopies checks that Keys and Descents are not shared
// between calls (within one result, nodes may share a Descent).
func TestSelectKeysAreCopies(t *testing.T) {
	nodes, err := MustParse(`$..*`).Select(context.Background(), evalDoc(t, "pod"))
	if err != nil {
		t.Fatal(err)
	}
	snapshot := fmt.Sprint(nodes)
	for _, nd := range nodes {
		for i := range nd.Keys {
			if d, ok := nd.Keys[i].(Descent); ok {
				for j := range d {
					d[j] = "clobbered"
				}
			}
		}
		nd.Keys[1] = "clobbered"
	}
	nodes2, _ := MustParse(`$..*`).Select(context.Background(), evalDoc(t, "pod"))
	if fmt.Sprint(nodes2) != snapshot {
		t.Error("Select results depend on each other")
	}
}

// deepArrays returns [[[...]]] nested depth levels.
func deepArrays(depth int) any {
	var v any = []any{}
	for i := 1; i < depth; i++ {
		v = []any{v}
	}
	return v
}

// TestTooManyValues checks that queries selecting nodes many times over
// fail with ErrTooManyValues instead of claiming memory without bound:
// ".." after ".." on a deep document is quadratic in its depth (2,000
// levels: 2 million values, each node with a Descent as long as its
// depth), and repeated union members multiply at every level.
func TestTooManyValues(t *testing.T) {
	// 2 million values; Select: each node holds a Descent as long as its
	// depth (shared only by nodes found at the same place), MaxKeys after
	// about a thousand nodes.
	e, deep := MustParse(`$..*..*`), deepArrays(2000)
	if _, err := e.Evaluate(context.Background(), deep); !errors.Is(err, ErrTooManyValues) {
		t.Errorf("Evaluate: got %v, want ErrTooManyValues", err)
	}
	if _, err := e.Select(context.Background(), deep); !errors.Is(err, ErrTooManyValues) {
		t.Errorf("Select: got %v, want ErrTooManyValues", err)
	}
	// Below the bounds, a quadratic query still works, and nodes found at
	// the same place share their '..' path.
	nodes, err := MustParse(`$..*..*`).Select(context.Background(), deepArrays(120))
	if err != nil {
		t.Fatal(err)
	}
	if want := 119 * 118 / 2; len(nodes) != want {
		t.Errorf("$..*..* on 120 levels: %d nodes, want %d", len(nodes), want)
	}
	nodes, err = MustParse(`$..*`).Select(context.Background(), map[string]any{"m": map[string]any{"a": "1", "b": "2"}})
	if err != nil || len(nodes) != 3 {
		t.Fatalf("$..*: %v, %v", nodes, err)
	}
	if d1, d2 := nodes[1].Keys[0].(Descent), nodes[2].Keys[0].(Descent); &d1[0] != &d2[0] {
		t.Errorf("siblings found by '..' do not share their Descent: %v, %v", d1, d2)
	}
}

// TestTooMuchWork checks that an evaluation ends after maxVisits nodes
// (lowered here: MaxVisits takes about a second) even when it selects
// nothing, in every kind of step that visits several nodes.
func TestTooMuchWork(t *testing.T) {
	items := make([]any, 1000)
	for i := range items {
		items[i] = map[string]any{"x": json.Number("1"), "y": []any{"a", "b"}}
	}
	doc := map[string]any{"items": items, "deep": deepArrays(200)}
	for _, src := range []string{`length($.deep..*..*..*) > 0`, `$.items[?(length($.items[*].y[*]) < 0)]`,
		`$.items[::1][0,1][?(@ == 1)]`, `$..z`, `$.items[*]..x`} {
		e := MustParse(src)
		ev := evaluator{ctx: context.Background(), root: doc, cur: doc, maxVisits: 1500}
		var err error
		if e.IsQuery() {
			err = ev.walk(e.path.steps, doc, &sink{mode: modeValues})
		} else {
			_, _, err = ev.eval(e.root)
		}
		if !errors.Is(err, ErrTooMuchWork) {
			t.Errorf("%s, 1500 visits at most: got %v, want ErrTooMuchWork", src, err)
		}
		if _, err := e.Evaluate(context.Background(), doc); errors.Is(err, ErrTooMuchWork) {
			t.Errorf("%s: %v", src, err)
		}
	}
}

// countingCtx reports cancellation after its Err method has been called
// limit times, to exercise the periodic checks.
type countingCtx struct {
	context.Context
	mu    sync.Mutex
	calls int
	limit int
}

func (c *countingCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.calls > c.limit {
		return context.Canceled
	}
	return nil
}

func TestContext(t *testing.T) {
	items := make([]any, 5000)
	for i := range items {
		items[i] = map[string]any{"x": json.Number("1"), "y": []any{"a", "b"}}
	}
	doc := map[string]any{"items": items}
	exprs := []string{`$..x`, `$.items[*].x`, `$.items[?(@.x == 1)]`, `$.items[::-1]`, `$.items[0,1,2]`,
		`length($..y[*]) > 1`, `isEmpty($..z)`, `$.items[?(isDefined($.items[*].z))]`, `$.kind`, `1 + 1`}
	for _, src := range exprs {
		e := MustParse(src)
		// Already cancelled.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := e.Evaluate(ctx, doc); !errors.Is(err, context.Canceled) {
			t.Errorf("Evaluate(%q) with a cancelled context: got %v", src, err)
		}
		if e.IsQuery() {
			if _, err := e.Select(ctx, doc); !errors.Is(err, context.Canceled) {
				t.Errorf("Select(%q) with a cancelled context: got %v", src, err)
			}
		}
		dctx, dcancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
		if _, err := e.Evaluate(dctx, doc); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Evaluate(%q) past the deadline: got %v", src, err)
		}
		dcancel()
		if src == `$.kind` || src == `1 + 1` || strings.HasPrefix(src, `$.items[0`) {
			continue
		}
		// Cancelled while running.
		cc := &countingCtx{Context: context.Background(), limit: 1}
		if _, err := e.Evaluate(cc, doc); !errors.Is(err, context.Canceled) {
			t.Errorf("Evaluate(%q) cancelled while running: got %v", src, err)
		}
	}
	// A nil context is treated as context.Background.
	var nilCtx context.Context
	if _, err := MustParse(`$..x`).Evaluate(nilCtx, doc); err != nil {
		t.Errorf("nil context: %v", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	doc := evalDoc(t, "pod")
	exprs := make([]*Expr, 0, len(evalCases))
	for _, tt := range evalCases {
		if tt.doc == "" {
			exprs = append(exprs, MustParse(tt.expr))
		}
	}
	want := make([]Result, len(exprs))
	for i, e := range exprs {
		want[i], _ = e.Evaluate(context.Background(), doc)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, e := range exprs {
				got, err := e.Evaluate(context.Background(), doc)
				if err != nil || !cmp.Equal(got, want[i]) {
					t.Errorf("concurrent Evaluate(%q) = %v, %v", e, got, err)
				}
			}
		}()
	}
	wg.Wait()
}

// TestOddTrees checks values that never come out of value.Decode but may
// be built by callers: they must not cause panics.
func TestOddTrees(t *testing.T) {
	doc := map[string]any{
		"f":   float64(1.5),
		"i":   int64(2),
		"n":   3,
		"nan": math.NaN(),
		"bad": json.Number("x"),
		"s":   map[string]string{"a": "b"},
		"p":   new(int),
	}
	tests := []struct {
		expr string
		want []any
	}{
		{`$.f + $.i + $.n`, []any{6.5}},
		{`$.i + $.n`, []any{int64(5)}},
		{`$.f < $.i`, []any{true}},
		{`$.nan == $.nan`, []any{false}},
		{`$.nan < 1`, []any{false}},
		{`$.bad == $.bad`, []any{true}}, // identical number text is equal (value.Equal)
		{`$.bad < 1`, []any{false}},
		{`$.s.a`, nil},
		{`isEmpty($.p)`, []any{false}},
		{`$.s == $.s`, []any{false}},
	}
	for _, tt := range tests {
		res, err := MustParse(tt.expr).Evaluate(context.Background(), doc)
		if err != nil {
			t.Errorf("Evaluate(%q): %v", tt.expr, err)
			continue
		}
		if diff := cmp.Diff(tt.want, res.Values); diff != "" {
			t.Errorf("Evaluate(%q): (-want +got)\n%s", tt.expr, diff)
		}
	}
	for _, src := range []string{`$.nan + 1`, `-$.bad`, `$.bad + 1`, `length($.p)`, `$.s + 1`} {
		if _, err := MustParse(src).Evaluate(context.Background(), doc); !errors.Is(err, ErrEval) {
			t.Errorf("Evaluate(%q): got %v, want an evaluation error", src, err)
		}
	}
	// A very deep tree ends recursive descent with an error.
	var deep any = "leaf"
	for i := 0; i < maxTreeDepth+10; i++ {
		deep = []any{deep}
	}
	if _, err := MustParse(`$..x`).Evaluate(context.Background(), deep); !errors.Is(err, ErrTooMuchWork) {
		t.Errorf("deep tree: got %v", err)
	}
	if res, err := MustParse(`$[0][0][0]`).Evaluate(context.Background(), deep); err != nil || len(res.Values) != 1 {
		t.Errorf("deep tree, definite path: %v, %v", res, err)
	}
}
