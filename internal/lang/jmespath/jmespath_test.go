package jmespath

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/lang"
)

func eval(t testing.TB, src string, in *lang.Activation) (any, error) {
	t.Helper()
	p, ds := Language{}.CompileExpr(&lang.Env{Name: "test"}, src)
	if ds != nil {
		t.Fatalf("compile %q: %v", src, ds)
	}
	return p.Eval(context.Background(), in)
}

func TestFunctions(t *testing.T) {
	obj := map[string]any{
		"n":      json.Number("12"),
		"f":      json.Number("1.5"),
		"labels": map[string]any{"app": "a", "tier": "web"},
		"list":   []any{json.Number("1"), json.Number("2")},
	}
	tests := []struct {
		src     string
		want    any
		wantErr string
	}{
		{src: "compare('a', 'b')", want: json.Number("-1")},
		{src: "compare('b', 'b')", want: json.Number("0")},
		{src: "equal_fold('Go', 'GO')", want: true},
		{src: "replace('a.a.a', '.', '-', `1`)", want: "a-a.a"},
		{src: "replace('a.a.a', '.', '-', `-1`)", want: "a-a-a"},
		{src: "replace_all('a.a.a', '.', '')", want: "aaa"},
		{src: "to_upper('aB1')", want: "AB1"},
		{src: "to_lower('aB1')", want: "ab1"},
		{src: "trim('--a-b--', '-')", want: "a-b"},
		{src: "trim_prefix('prefix-x', 'prefix-')", want: "x"},
		{src: "split('a,b,,c', ',')", want: []any{"a", "b", "", "c"}},
		{src: "regex_replace_all('a(\\d)', 'a1 a2', 'b$1')", want: "b1 b2"},
		{src: "regex_replace_all_literal('a\\d', 'a1 a2', '$1')", want: "$1 $1"},
		{src: "regex_replace_all('\\d', n, 'x')", want: "xx"},
		{src: "regex_match('^1\\d$', n)", want: true},
		{src: "regex_match('^x', 'y')", want: false},
		{src: "regex_match('(', 'y')", wantErr: "JMESPath function 'regex_match': "},
		{src: "pattern_match('a*c?', 'abbcd')", want: true},
		{src: "pattern_match('a*c', 'abbcd')", want: false},
		{src: "pattern_match('1?', n)", want: true},
		{src: "label_match(`{\"app\":\"a\"}`, labels)", want: true},
		{src: "label_match(`{\"app\":\"b\"}`, labels)", want: false},
		{src: "label_match(`{\"x\":\"a\"}`, labels)", want: false},
		{src: "label_match(`{\"n\":\"1\"}`, `{\"n\":1}`)", want: false},
		{src: "label_match(`{\"o\":{\"a\":[1]}}`, `{\"o\":{\"a\":[1]},\"p\":2}`)", want: true},
		{src: "regex_match('^123456790$', `123456789`)", want: true}, // float32 text, as Kyverno
		{src: "to_boolean('TRUE')", want: true},
		{src: "to_boolean('False')", want: false},
		{src: "to_boolean('yes')", wantErr: "JMESPath function 'to_boolean': lowercase argument must be 'true' or 'false' (provided: 'yes')"},
		{src: "to_boolean(`1`)", wantErr: "JMESPath function 'to_boolean': invalid type for: 1"},
		{src: "to_upper('a', 'b')", wantErr: "JMESPath function 'to_upper': invalid arity"},
		{src: "length(`1`)", wantErr: "JMESPath function 'length': invalid type for: 1"},
		{src: "base64_encode('hi')", want: "aGk="},
		{src: "base64_decode('aGk=')", want: "hi"},
		{src: "base64_decode('!')", wantErr: "JMESPath function 'base64_decode': "},
		{src: "sha256('')", want: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{src: "sha1('')", want: "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
		{src: "md5('')", want: "d41d8cd98f00b204e9800998ecf8427e"},
		{src: "truncate('abcdef', `3.9`)", want: "abc"},
		{src: "truncate('abc', `-1`)", want: ""},
		{src: "truncate('abc', `10`)", want: "abc"},
		{src: "truncate('abc', `3`)", want: "abc"},
		{src: "truncate('¡¡¡x', `2`)", want: "¡¡"},
		{src: "path_canonicalize('//a/./b/../c//')", want: "/a/c"},
		{src: "parse_json('{\"a\":[1,2.5]}')", want: map[string]any{"a": []any{json.Number("1"), json.Number("2.5")}}},
		{src: "parse_json('{')", wantErr: "JMESPath function 'parse_json': "},
		{src: "parse_yaml('a: [1, b]')", want: map[string]any{"a": []any{json.Number("1"), "b"}}},
		{src: "parse_yaml('a: [')", wantErr: "JMESPath function 'parse_yaml': "},
		{src: "items(labels, 'k', 'v')", want: []any{map[string]any{"k": "app", "v": "a"}, map[string]any{"k": "tier", "v": "web"}}},
		{src: "items(list, 'i', 'v')", want: []any{map[string]any{"i": json.Number("0"), "v": json.Number("1")}, map[string]any{"i": json.Number("1"), "v": json.Number("2")}}},
		{src: "object_from_lists(`[\"a\",\"b\"]`, `[1]`)", want: map[string]any{"a": json.Number("1"), "b": nil}},
		{src: "object_from_lists(`[1]`, `[1]`)", wantErr: "JMESPath function 'object_from_lists': key #1 is not a string"},
		{src: "lookup(labels, 'app')", want: "a"},
		{src: "lookup(labels, 'none')", want: nil},
		{src: "lookup(list, `1`)", want: json.Number("2")},
		{src: "lookup(list, `2`)", want: nil},
		{src: "lookup(list, `0.5`)", wantErr: "JMESPath function 'lookup': argument #2: expected an integer number but got: 0.5"},
		{src: "lookup(list, 'a')", wantErr: "JMESPath function 'lookup': argument #2 is not of type Number"},
		{src: "lookup(labels, `1`)", wantErr: "JMESPath function 'lookup': argument #2 is not of type String"},
		{src: "semver_compare('1.2.3', '>=1.2.0 <2.0.0')", want: true},
		{src: "semver_compare('1.2.3', '1.2.4')", want: false},
		{src: "semver_compare('x', '1.2.4')", wantErr: "JMESPath function 'semver_compare': "},
		{src: "image_normalize('nginx')", want: "docker.io/nginx:latest"},
		{src: "image_normalize('localhost/a/b:1')", want: "localhost/a/b:1"},
		{src: "image_normalize('reg:5000/a')", want: "reg:5000/a:latest"},
		{src: "image_normalize('nginx@sha256:abc')", want: "docker.io/nginx@sha256:abc"},
		{src: "image_normalize('ghcr.io/a/nginx:1.2@sha256:abc')", want: "ghcr.io/a/nginx@sha256:abc"},
		{src: "image_normalize('Reg/nginx')", want: "Reg/nginx:latest"},
		{src: "image_normalize('nginx:')", wantErr: "JMESPath function 'image_normalize': bad image"},
		{src: "image_normalize('')", wantErr: "JMESPath function 'image_normalize': bad image"},
		{src: "add(`1.5`, n)", want: json.Number("13.5")},
		{src: "add('1Gi', '512Mi')", want: "1536Mi"},
		{src: "add('1m', '1m')", want: "2m"},
		{src: "add('1h', '30m0s')", want: "1h30m0s"},
		{src: "add('1h', `1`)", wantErr: "JMESPath function 'add': Types mismatch"},
		{src: "add('x', '1')", wantErr: "JMESPath function 'add': argument #1 is neither"},
		{src: "subtract('1Gi', '512Mi')", want: "512Mi"},
		{src: "subtract('1h', '90m0s')", want: "-30m0s"},
		{src: "subtract('1h', '90m')", wantErr: "Types mismatch"}, // '90m' is a quantity
		{src: "multiply('0.1', `3`)", want: "300m"},
		{src: "divide('1', `3`)", want: "0"}, // rounded down at the operands' scale, as Kyverno
		{src: "divide('1000m', `3`)", want: "333m"},
		{src: "multiply('100m', `3`)", want: "300m"},
		{src: "multiply(`3`, '1h')", want: "3h0m0s"},
		{src: "multiply('1h', '1h')", wantErr: "Types mismatch"},
		{src: "divide('1Gi', '256Mi')", want: json.Number("4")},
		{src: "divide('1Gi', `4`)", want: "256Mi"},
		{src: "divide('1h', `2`)", want: "30m0s"},
		{src: "divide('1h', '0s')", wantErr: "JMESPath function 'divide': Zero divisor passed"},
		{src: "divide(`1`, '1h')", wantErr: "Types mismatch"},
		{src: "modulo('10Mi', '3Mi')", want: "1Mi"},
		{src: "modulo('1h', '7m0s')", want: "4m0s"},
		{src: "modulo(`7`, `2`)", want: json.Number("1")},
		{src: "modulo(`7`, `0`)", wantErr: "Zero divisor passed"},
		{src: "modulo(`7.5`, `2`)", wantErr: "Non-integer argument(s) passed for modulo"},
		{src: "sum(`[\"1Gi\", \"1Gi\"]`)", want: "2Gi"},
		{src: "sum(`[\"1s\", \"2s\"]`)", want: "3s"},
		{src: "sum(`[1, \"2s\"]`)", wantErr: "JMESPath function 'sum': Types mismatch"},
		{src: "sum(`[]`)", wantErr: "JMESPath function 'sum': at least one element in the array is required"},
		{src: "round(`2.345`, `1`)", want: json.Number("2.3")},
		{src: "round(`2.5`, `0`)", want: json.Number("3")},
		{src: "round(`2.5`, `0.5`)", wantErr: "Non-integer argument(s) passed for round off"},
		{src: "round(`2.5`, `-1`)", wantErr: "JMESPath function 'round': "},
		{src: "time_since('', '2024-01-01T00:00:00Z', '2024-01-02T01:00:00Z')", want: "25h0m0s"},
		{src: "time_since('2006-01-02', '2024-01-01', '2024-01-03')", want: "48h0m0s"},
		{src: "time_since('', 'x', '')", wantErr: "JMESPath function 'time_since': "},
		{src: "time_add('2024-01-01T00:00:00+02:00', '90m')", want: "2024-01-01T01:30:00+02:00"},
		{src: "time_add('2024-01-01T00:00:00Z', 'x')", wantErr: "JMESPath function 'time_add': argument #2: "},
		{src: "time_truncate('2024-01-01T10:47:13Z', '1h')", want: "2024-01-01T10:00:00Z"},
		{src: "time_parse('2006-01-02 15:04', '2024-03-04 05:06')", want: "2024-03-04T05:06:00Z"},
		{src: "time_parse('0', '0')", want: "1970-01-01T00:00:00Z"},
		{src: "time_parse('0', 'x')", wantErr: "JMESPath function 'time_parse': "},
		{src: "time_utc('2024-01-01T00:00:00+02:00')", want: "2023-12-31T22:00:00Z"},
		{src: "time_utc('yesterday')", wantErr: "JMESPath function 'time_utc': argument #1: "},
		{src: "time_to_cron('2024-01-01T10:47:13Z')", want: "47 10 1 1 1"},
		{src: "time_diff('2024-01-02T00:00:00Z', '2024-01-01T00:00:00Z')", want: "-24h0m0s"},
		{src: "time_before('2024-01-01T00:00:00Z', '2024-01-01T00:00:01Z')", want: true},
		{src: "time_after('2024-01-01T00:00:00Z', '2024-01-01T00:00:01Z')", want: false},
		{src: "time_between('2024-01-01T00:00:00Z', '2024-01-01T00:00:00Z', '2024-01-02T00:00:00Z')", want: false},
		{src: "time_between('2024-01-01T12:00:00Z', '2024-01-01T00:00:00Z', '2024-01-02T00:00:00Z')", want: true},
		{src: "length(time_now_utc()) > `0`", want: true},
		{src: "is_external_url('https://10.0.0.1:8443/x')", want: false},
		{src: "is_external_url('http://169.254.169.254/latest')", want: false},
		{src: "is_external_url('http://[::1]')", want: false},
		{src: "is_external_url('http://1.1.1.1')", want: true},
		{src: "is_external_url('http://a b')", wantErr: "JMESPath function 'is_external_url': "},
		{src: "n", want: json.Number("12")},
		{src: "f", want: json.Number("1.5")},
		{src: "sum(list)", want: json.Number("3")},
		{src: "length(labels)", want: json.Number("2")},
		{src: "missing", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			got, err := eval(t, tt.src, &lang.Activation{Object: obj})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, %v; want error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestX509Decode(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(42),
		Subject:      pkix.Name{CommonName: "test.example"},
		DNSNames:     []string{"a.example"},
		NotBefore:    time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:     time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{"pem": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
	got, err := eval(t, "x509_decode(pem).[Subject.CommonName, DNSNames[0], SerialNumber, NotAfter]", &lang.Activation{Object: doc})
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"test.example", "a.example", json.Number("42"), "2025-01-01T00:00:00Z"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, src := range []string{"x509_decode('x')", "x509_decode('-----BEGIN X-----\nAAAA\n-----END X-----')"} {
		if _, err := eval(t, src, &lang.Activation{}); err == nil || !strings.HasPrefix(err.Error(), "JMESPath function 'x509_decode': ") {
			t.Errorf("%s: got %v", src, err)
		}
	}
}

func TestRandom(t *testing.T) {
	for _, pattern := range []string{`[a-z]{5}`, `^x(ab|cd)+\d*-[0-9a-f]{2,4}$`, `.?\w\s[^a-z]`, `(?i)Ab`, `x{2,}`} {
		re := regexp.MustCompile("^(?:" + pattern + ")$")
		for range 50 {
			got, err := eval(t, "random('"+pattern+"')", &lang.Activation{})
			if err != nil {
				t.Fatal(err)
			}
			if s, ok := got.(string); !ok || !re.MatchString(s) {
				t.Fatalf("random(%q) = %q: does not match", pattern, got)
			}
		}
	}
	for _, src := range []string{"random('')", "random('(')", "random('x{1000}{1000}')", "random('[^\\x00-\\x{10FFFF}]')"} {
		if _, err := eval(t, src, &lang.Activation{}); err == nil || !strings.HasPrefix(err.Error(), "JMESPath function 'random': ") {
			t.Errorf("%s: got %v", src, err)
		}
	}
}

func TestFunctionError(t *testing.T) {
	_, err := eval(t, "to_boolean('x')", &lang.Activation{})
	var fe *FunctionError
	if !errors.As(err, &fe) || fe.Function != "to_boolean" {
		t.Fatalf("got %#v", err)
	}
}

func TestCompileDiagnostic(t *testing.T) {
	_, ds := Language{}.Compile(&lang.Env{Name: "test"}, "a.[")
	if len(ds) != 1 || ds[0].Pos < 0 {
		t.Fatalf("got %v, want one positioned diagnostic", ds)
	}
	_, ds = Language{}.Compile(&lang.Env{Name: "test"}, "a || to_uper(b)")
	want := []lang.Diagnostic{{Pos: 5, Msg: "unknown function: to_uper"}}
	if diff := cmp.Diff(want, ds); diff != "" {
		t.Errorf("unknown function (-want +got):\n%s", diff)
	}
	_, ds = Language{}.Compile(&lang.Env{Name: "e", Limits: lang.Limits{MaxWork: 10}}, "a")
	want = []lang.Diagnostic{{Pos: -1, Msg: `environment "e" sets limits, which jmespath cannot honour (it has no evaluation bounds)`}}
	if diff := cmp.Diff(want, ds); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
	if (Language{}).Name() != "jmespath" {
		t.Error("name")
	}
}

func TestBinding(t *testing.T) {
	ctxDoc := map[string]any{"request": map[string]any{"operation": "CREATE"}}
	in := &lang.Activation{Object: map[string]any{"request": "object"}, Vars: map[string]any{VarContext: ctxDoc}}
	got, err := eval(t, "request.operation", in)
	if err != nil || got != "CREATE" {
		t.Fatalf("got %v, %v", got, err)
	}
	lazy := &lang.LazyFunc{Keys: []string{"a"}, Get: func(string) (any, error) { return json.Number("7"), nil }}
	got, err = eval(t, "variables.a", &lang.Activation{Vars: map[string]any{VarContext: map[string]any{"variables": lazy}}})
	if err != nil || got != json.Number("7") {
		t.Fatalf("lazy: got %v, %v", got, err)
	}
	boom := errors.New("boom")
	bad := &lang.LazyFunc{Keys: []string{"a"}, Get: func(string) (any, error) { return nil, boom }}
	if _, err := eval(t, "a", &lang.Activation{Object: bad}); !errors.Is(err, boom) {
		t.Fatalf("lazy error: got %v", err)
	}
}

func TestInputNotModified(t *testing.T) {
	obj := map[string]any{"a": []any{json.Number("1"), map[string]any{"b": json.Number("2")}}, "s": "x"}
	if _, err := eval(t, "a", &lang.Activation{Object: obj}); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": []any{json.Number("1"), map[string]any{"b": json.Number("2")}}, "s": "x"}
	if diff := cmp.Diff(want, obj); diff != "" {
		t.Errorf("input changed (-want +got):\n%s", diff)
	}
}

func TestPrepareSearch(t *testing.T) {
	doc := map[string]any{"a": []any{json.Number("1"), json.Number("2.5")}}
	data, err := Prepare(doc)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := Language{}.CompileExpr(&lang.Env{Name: "test"}, "sum(a)")
	res, err := p.Search(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	if got := Result(res); got != json.Number("3.5") {
		t.Errorf("got %v", got)
	}
	if _, err := Prepare(json.Number("x")); err == nil {
		t.Error("Prepare accepted a bad number")
	}
}

func TestContextCanceled(t *testing.T) {
	p, _ := Language{}.CompileExpr(&lang.Env{Name: "test"}, "a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Eval(ctx, &lang.Activation{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

// BenchmarkSearchPrepared evaluates over a document converted once (the
// way to evaluate many expressions per request).
func BenchmarkSearchPrepared(b *testing.B) {
	p, ds := Language{}.CompileExpr(&lang.Env{Name: "bench"}, "request.object.spec.replicas")
	if ds != nil {
		b.Fatal(ds)
	}
	data, err := Prepare(map[string]any{"request": map[string]any{"object": map[string]any{
		"spec": map[string]any{"replicas": json.Number("3")},
	}}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := p.Search(context.Background(), data)
		if err != nil {
			b.Fatal(err)
		}
		_ = Result(res)
	}
}

func BenchmarkEval(b *testing.B) {
	p, ds := Language{}.CompileExpr(&lang.Env{Name: "bench"}, "to_upper(request.object.metadata.labels.app)")
	if ds != nil {
		b.Fatal(ds)
	}
	doc := map[string]any{"request": map[string]any{"object": map[string]any{
		"metadata": map[string]any{"name": "x", "labels": map[string]any{"app": "web"}},
		"spec":     map[string]any{"replicas": json.Number("3")},
	}}}
	in := &lang.Activation{Vars: map[string]any{VarContext: doc}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Eval(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}
