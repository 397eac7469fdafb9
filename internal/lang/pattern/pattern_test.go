package pattern

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/value"
)

func decode(t testing.TB, y string) any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	v, err := value.Decode(j)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// result is a Failure summarized: "pass", "skip", "error" or "fail
// PATH".
func result(f *Failure) string {
	switch {
	case f == nil:
		return "pass"
	case f.Skip:
		return "skip"
	case f.Path == "":
		return "error"
	}
	return "fail " + f.Path
}

const pod = `
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app.kubernetes.io/name: web, tier: front}
  annotations: {team: a}
spec:
  hostNetwork: false
  replicas: 3
  ratio: 1.5
  securityContext: {runAsNonRoot: true, runAsUser: 1000}
  containers:
  - name: app
    image: nginx:1.25
    ports: [{containerPort: 8080}]
    resources: {limits: {memory: 512Mi, cpu: 500m}}
    securityContext: {privileged: false, capabilities: {add: [NET_BIND_SERVICE]}}
  - name: side
    image: busybox:latest
    resources: {limits: {memory: 2Gi}}
  volumes:
  - name: data
    emptyDir: {}
  probe: {period: 90s}
`

func TestMatch(t *testing.T) {
	obj := decode(t, pod)
	for _, tc := range []struct{ name, pattern, want string }{
		// Plain keys, wildcards and structure.
		{"equal", `{spec: {hostNetwork: false}}`, "pass"},
		{"bool mismatch", `{spec: {hostNetwork: true}}`, "fail /spec/hostNetwork/"},
		{"missing map", `{spec: {missing: {a: b}}}`, "fail /spec/missing/"},
		{"star present", `{metadata: {name: "*"}}`, "pass"},
		{"star absent", `{metadata: {namespace: "*"}}`, "fail /metadata/"},
		{"question star", `{metadata: {name: "?*"}}`, "pass"},
		{"question star absent", `{metadata: {namespace: "?*"}}`, "fail /metadata/namespace/"},
		{"wildcard", `{spec: {containers: [{image: "*:*"}]}}`, "pass"},
		{"wildcard fails second", `{spec: {containers: [{image: "!*:latest"}]}}`, "fail /spec/containers/1/image/"},
		{"alternatives", `{spec: {containers: [{name: "app | side"}]}}`, "pass"},
		{"alternatives fail", `{spec: {containers: [{name: "app | web"}]}}`, "fail /spec/containers/1/name/"},
		{"and", `{metadata: {name: "w* & !*x"}}`, "pass"},
		{"and fails", `{metadata: {name: "w* & !*b"}}`, "fail /metadata/name/"},
		{"scalar against list", `{spec: {containers: [{=(securityContext): {capabilities: {add: ["NET_*"]}}}]}}`, "pass"},
		{"scalar list element fails", `{spec: {containers: [{securityContext: {capabilities: {add: ["SYS_*"]}}}]}}`, "fail /spec/containers/0/securityContext/capabilities/add/"},
		{"empty pattern list", `{spec: {containers: []}}`, "fail /spec/containers/"},
		{"list against map", `{spec: {securityContext: [a]}}`, "fail /spec/securityContext/"},
		// Numbers, operators, ranges, quantities, durations.
		{"number", `{spec: {replicas: 3}}`, "pass"},
		{"number fraction", `{spec: {ratio: 1.5}}`, "pass"},
		{"number mismatch", `{spec: {replicas: 4}}`, "fail /spec/replicas/"},
		{"greater", `{spec: {replicas: ">2"}}`, "pass"},
		{"greater fails", `{spec: {replicas: ">3"}}`, "fail /spec/replicas/"},
		{"greater equal", `{spec: {replicas: ">=3"}}`, "pass"},
		{"less equal", `{spec: {replicas: "<=2"}}`, "fail /spec/replicas/"},
		{"not", `{spec: {replicas: "!4"}}`, "pass"},
		{"range", `{spec: {replicas: "1-5"}}`, "pass"},
		{"range fails", `{spec: {replicas: "4-5"}}`, "fail /spec/replicas/"},
		{"not in range", `{spec: {replicas: "4!-5"}}`, "pass"},
		{"ranges alternatives", `{spec: {containers: [{=(ports): [{containerPort: "80-90 | 8000-9000"}]}]}}`, "pass"},
		{"quantity", `{spec: {containers: [{resources: {limits: {memory: "<=1Gi"}}}]}}`, "fail /spec/containers/1/resources/limits/memory/"},
		{"quantity cpu", `{spec: {containers: [{=(resources): {=(limits): {=(cpu): "<1"}}}]}}`, "pass"},
		{"duration", `{spec: {probe: {period: ">1m"}}}`, "pass"},
		{"duration fails", `{spec: {probe: {period: "<1m"}}}`, "fail /spec/probe/period/"},
		{"string ordering undefined", `{metadata: {name: ">a"}}`, "fail /metadata/name/"},
		{"null pattern", `{spec: {missing: null}}`, "pass"},
		{"null pattern false", `{spec: {hostNetwork: null}}`, "pass"},
		{"null pattern set", `{metadata: {name: null}}`, "fail /metadata/name/"},
		// Equality anchors: checked only when present.
		{"equality present", `{spec: {securityContext: {=(runAsNonRoot): true}}}`, "pass"},
		{"equality absent", `{spec: {securityContext: {=(seccompProfile): {type: RuntimeDefault}}}}`, "pass"},
		{"equality fails", `{spec: {=(hostNetwork): true}}`, "fail /spec/hostNetwork/"},
		{"equality in list", `{spec: {containers: [{=(securityContext): {=(privileged): false}}]}}`, "pass"},
		// Negation anchors: the key must be absent.
		{"negation absent", `{spec: {X(hostPID): "*"}}`, "pass"},
		{"negation present", `{spec: {X(hostNetwork): "null"}}`, "fail /spec/hostNetwork/"},
		{"negation in list", `{spec: {volumes: [{X(hostPath): "null"}]}}`, "pass"},
		// Conditional anchors: the rest applies only when they hold.
		{"conditional holds", `{spec: {containers: [{(name): app, image: "nginx:*"}]}}`, "pass"},
		{"conditional skips elements", `{spec: {containers: [{(name): side, image: "busybox:*"}]}}`, "pass"},
		{"conditional holds then fails", `{spec: {containers: [{(name): side, image: "nginx:*"}]}}`, "fail /spec/containers/1/image/"},
		{"conditional never holds", `{spec: {containers: [{(name): db, image: "nginx:*"}]}}`, "skip"},
		{"conditional key absent", `{spec: {(dnsPolicy): None, hostNetwork: true}}`, "skip"},
		{"conditional on metadata", `{metadata: {labels: {(tier): back}}, spec: {hostNetwork: true}}`, "skip"},
		// Global anchors: the whole pattern applies only when they hold.
		{"global holds", `{spec: {containers: [{<(image): "nginx:*"}], hostNetwork: false}}`, "pass"},
		{"global fails", `{spec: {<(hostNetwork): true, replicas: 4}}`, "skip"},
		// Existence anchors: some element matches.
		{"existence", `{spec: {^(containers): [{image: "busybox:*"}]}}`, "pass"},
		{"existence fails", `{spec: {^(containers): [{image: "redis:*"}]}}`, "fail /spec/containers/"},
		// Metadata wildcards.
		{"label wildcard key", `{metadata: {labels: {"app.kubernetes.io/*": "?*"}}}`, "pass"},
		{"label wildcard key fails", `{metadata: {labels: {"app.kubernetes.io/*": "db"}}}`, "fail /metadata/labels/app.kubernetes.io/name/"},
		{"label wildcard key absent", `{metadata: {labels: {"team.io/*": "?*"}}}`, "fail /metadata/labels/team.io/*/"},
		{"annotation wildcard anchored", `{metadata: {annotations: {=(te*): a}}}`, "pass"},
		// Lists of lists have their lengths compared.
		{"list of lists short", `{spec: {containers: [[a], [b], [c]]}}`, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Compile(decode(t, tc.pattern))
			if err != nil {
				t.Fatal(err)
			}
			f := p.Match(obj)
			if got := result(f); got != tc.want {
				t.Errorf("Match = %s (%v), want %s", got, f, tc.want)
			}
		})
	}
}

func TestMessages(t *testing.T) {
	obj := decode(t, pod)
	for _, tc := range []struct{ pattern, want string }{
		{`{spec: {X(hostNetwork): "null"}}`, "negation anchor matched in resource: /spec/hostNetwork/ is not allowed"},
		{`{spec: {replicas: ">3"}}`, "resource value '3' does not match '>3' at path /spec/replicas/"},
		{`{spec: {(dnsPolicy): None}}`, "conditional anchor mismatch: conditional anchor key doesn't exist in the resource"},
		{`{metadata: {namespace: "*"}}`, "/metadata//namespace not found"},
		{`{spec: {securityContext: {seccompProfile: {type: RuntimeDefault}}}}`, "pattern and resource have different structures. Path: /spec/securityContext/seccompProfile/. Expected map[string]interface {}, found <nil>"},
	} {
		p, err := Compile(decode(t, tc.pattern))
		if err != nil {
			t.Fatal(err)
		}
		f := p.Match(obj)
		if f == nil || f.Msg != tc.want {
			t.Errorf("%s: Match = %v, want %q", tc.pattern, f, tc.want)
		}
	}
}

func TestMatchString(t *testing.T) {
	for _, tc := range []struct {
		value, pattern string
		want           bool
	}{
		{"nginx", "nginx", true},
		{"nginx", "ngi*", true},
		{"nginx", "!ngi*", false},
		{"5", ">4 & <6", true},
		{"512Mi", "<1Gi", true},
		{"2h", ">=120m", true},
		{"x|y", "x|y", true}, // the pattern as text first
		{"3", "1-2 | 3-4", true},
		{"3", "1!-4", false},
		{"", "?*", false},
	} {
		if got := MatchString(tc.value, tc.pattern); got != tc.want {
			t.Errorf("MatchString(%q, %q) = %v, want %v", tc.value, tc.pattern, got, tc.want)
		}
	}
}

func TestCompileBounds(t *testing.T) {
	deep := strings.Repeat(`{a: `, MaxDepth+2) + "x" + strings.Repeat("}", MaxDepth+2)
	if _, err := Compile(decode(t, deep)); !errors.Is(err, lang.ErrLimit) {
		t.Errorf("deep pattern: %v, want lang.ErrLimit", err)
	}
}

// TestMatchDoesNotMutate: matching leaves the object and the pattern as
// they were (the metadata wildcards are resolved in a copy).
func TestMatchDoesNotMutate(t *testing.T) {
	obj := decode(t, pod)
	src := decode(t, `{metadata: {labels: {"app.kubernetes.io/*": "?*"}}}`)
	p, err := Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	p.Match(obj)
	if diff := cmp.Diff(decode(t, pod), obj); diff != "" {
		t.Errorf("object changed (-was +is):\n%s", diff)
	}
	if diff := cmp.Diff(decode(t, `{metadata: {labels: {"app.kubernetes.io/*": "?*"}}}`), p.Source()); diff != "" {
		t.Errorf("pattern changed (-was +is):\n%s", diff)
	}
}

func FuzzMatch(f *testing.F) {
	f.Add(`{"spec":{"=(a)":{"X(b)":"null","(c)":">1 | a*"}}}`, `{"spec":{"a":{"c":2}}}`)
	f.Add(`{"^(l)":[{"n":"1-3"}],"<(g)":[1]}`, `{"l":[{"n":2}],"g":[1,2]}`)
	f.Add(`{"metadata":{"labels":{"a*":"?*"}}}`, `{"metadata":{"labels":{"ab":"x"}}}`)
	f.Fuzz(func(t *testing.T, pat, obj string) {
		pv, err := value.Decode([]byte(pat))
		if err != nil {
			return
		}
		ov, err := value.Decode([]byte(obj))
		if err != nil {
			return
		}
		p, err := Compile(pv)
		if err != nil {
			return
		}
		f := p.Match(ov)
		if f != nil && f.Skip && f.Path != "" {
			t.Errorf("a skip has no path: %+v", f)
		}
		if again := p.Match(ov); result(again) != result(f) {
			t.Errorf("not deterministic: %s then %s", result(f), result(again))
		}
	})
}
