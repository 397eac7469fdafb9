package cel_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
)

// fakeData answers Kyverno's data libraries from fixed objects and
// records the calls.
type fakeData struct {
	calls []string
}

func (f *fakeData) GetResource(apiVersion, resource, namespace, name string) (map[string]any, error) {
	f.calls = append(f.calls, "get "+apiVersion+" "+resource+" "+namespace+" "+name)
	switch name {
	case "missing":
		return nil, nil
	case "offline":
		return nil, lang.NoReader("no objects given")
	}
	return map[string]any{"metadata": map[string]any{"name": name, "namespace": namespace}, "data": map[string]any{"k": "v"}}, nil
}

func (f *fakeData) ListResources(apiVersion, resource, namespace string, labels map[string]string) (map[string]any, error) {
	f.calls = append(f.calls, "list "+apiVersion+" "+resource+" "+namespace+" "+labels["app"])
	return map[string]any{"items": []any{map[string]any{"spec": map[string]any{"scaleTargetRef": map[string]any{"name": "web"}}}}}, nil
}

func (f *fakeData) PostResource(apiVersion, resource, namespace string, data map[string]any) (map[string]any, error) {
	f.calls = append(f.calls, "post "+apiVersion+" "+resource+" "+namespace)
	return map[string]any{"status": map[string]any{"allowed": data["spec"] != nil}}, nil
}

func (f *fakeData) ImageData(image string) (map[string]any, error) {
	if image != "ghcr.io/a/b:v1" {
		return nil, errors.New("image data for " + image + " not found")
	}
	return map[string]any{"image": image, "config": map[string]any{"created": "2026-01-02T03:04:05Z"}}, nil
}

func (f *fakeData) HTTP(method, url string, body any, headers map[string]string, ca string) (any, error) {
	f.calls = append(f.calls, method+" "+url+" "+headers["Authorization"]+" "+ca[:min(len(ca), 10)])
	return map[string]any{"statusCode": json.Number("200"), "body": body}, nil
}

func (f *fakeData) GlobalContext(name, projection string) (any, error) {
	return map[string]any{"name": name, "projection": projection}, nil
}

func (f *fakeData) ResourceFor(apiVersion, kind string) (string, error) {
	if kind == "Unknown" {
		return "", errors.New("no resource known for " + apiVersion + " " + kind)
	}
	return strings.ToLower(kind) + "s", nil
}

// TestKyvernoData: Kyverno's data libraries, in both scopes, and those
// that parse.
func TestKyvernoData(t *testing.T) {
	env := &lang.Env{Name: "kyverno", Vars: []lang.Var{{Name: cel.VarObject}, {Name: cel.VarResource}, {Name: cel.VarImageData},
		{Name: cel.VarHTTP}, {Name: cel.VarGlobalContext}}}
	cert := testCert(t)
	for _, tc := range []struct {
		scope cel.DataScope
		src   string
		want  any
		calls []string
		err   string
	}{
		{cel.ClusterData, `resource.Get("v1", "configmaps", "team", "cm").data.k`, "v", []string{"get v1 configmaps team cm"}, ""},
		{cel.ClusterData, `resource.get("v1", "configmaps", "team", "missing")`, nil, []string{"get v1 configmaps team missing"}, ""},
		{cel.NamespacedData, `resource.Get("v1", "configmaps", "cm").metadata.namespace`, "", []string{"get v1 configmaps  cm"}, ""},
		{cel.ClusterData, `resource.List("autoscaling/v1", "horizontalpodautoscalers", "team").items.exists(h, h.spec.scaleTargetRef.name == "web")`, true,
			[]string{"list autoscaling/v1 horizontalpodautoscalers team "}, ""},
		{cel.ClusterData, `resource.List("apps/v1", "deployments", "team", {"app": "web"}).items.size()`, int64(1), []string{"list apps/v1 deployments team web"}, ""},
		{cel.NamespacedData, `resource.list("apps/v1", "deployments").items.size()`, int64(1), []string{"list apps/v1 deployments  "}, ""},
		{cel.ClusterData, `resource.Post("authorization.k8s.io/v1", "subjectaccessreviews", "", {"spec": {"user": "u"}}).status.allowed`, true,
			[]string{"post authorization.k8s.io/v1 subjectaccessreviews "}, ""},
		{cel.ClusterData, `resource.Get("v1", "configmaps", "team", "offline")`, nil, nil, "failed to get resource: no objects given"},
		// ToGVR names a kind's resource, which Get and List take.
		{cel.ClusterData, `resource.Get(resource.ToGVR("v1", "ConfigMap"), "team", "cm").data.k`, "v", []string{"get v1 configmaps team cm"}, ""},
		{cel.ClusterData, `resource.list(resource.toGVR("apps/v1", "Deployment"), "team", {"app": "web"}).items.size()`, int64(1), []string{"list apps/v1 deployments team web"}, ""},
		{cel.ClusterData, `resource.List(resource.ToGVR("apps/v1", "Deployment"), "team").items.size()`, int64(1), []string{"list apps/v1 deployments team "}, ""},
		{cel.NamespacedData, `resource.Get(resource.ToGVR("v1", "ConfigMap"), "cm").data.k`, "v", []string{"get v1 configmaps  cm"}, ""},
		{cel.NamespacedData, `resource.List(resource.ToGVR("apps/v1", "Deployment")).items.size() + resource.List(resource.ToGVR("apps/v1", "Deployment"), {"app": "web"}).items.size()`, int64(2),
			[]string{"list apps/v1 deployments  ", "list apps/v1 deployments  web"}, ""},
		{cel.ClusterData, `resource.ToGVR("v1", "ConfigMap") == resource.ToGVR("v1", "ConfigMap") && resource.ToGVR("v1", "ConfigMap") != resource.ToGVR("v1", "Secret")`, true, nil, ""},
		{cel.ClusterData, `resource.ToGVR("x/v1", "Unknown")`, nil, nil, "failed to convert to GVR: no resource known for x/v1 Unknown"},
		{cel.ClusterData, `timestamp(image.GetMetadata("ghcr.io/a/b:v1").config.created) < timestamp("2027-01-01T00:00:00Z")`, true, nil, ""},
		{cel.ClusterData, `image.getMetadata("nginx")`, nil, nil, "failed to get image data: image data for nginx not found"},
		{cel.ClusterData, `image("nginx").registry() + "/" + string(image.GetMetadata("ghcr.io/a/b:v1").image)`, "index.docker.io/ghcr.io/a/b:v1", nil, ""},
		{cel.ClusterData, `http.Get("https://x.example/a").statusCode`, int64(200), []string{"GET https://x.example/a  "}, ""},
		{cel.ClusterData, `http.Post("https://x.example/a", {"q": 1}, {"Authorization": "Bearer t"}).body.q`, int64(1), []string{"POST https://x.example/a Bearer t "}, ""},
		{cel.ClusterData, `http.Client("` + cert + `").Get("https://x.example/b").statusCode`, int64(200), []string{"GET https://x.example/b  -----BEGIN"}, ""},
		{cel.ClusterData, `globalContext.Get("deployments", "count").projection`, "count", nil, ""},
		{cel.ClusterData, `globalContext.get("deployments").name`, "deployments", nil, ""},
		{cel.NoData, `json.unmarshal('{"a": [1, 2]}').a[1] + 0.5`, 2.5, nil, ""},
		{cel.NoData, `json.marshal({"a": [1, 2]})`, `{"a":[1,2]}`, nil, ""},
		{cel.NoData, `json.unmarshal("{")`, nil, nil, "json.unmarshal"},
		{cel.NoData, `yaml.parse("a:\n  b: [x, y, 3]\n").a.b[2] + 0.5`, 3.5, nil, ""},
		{cel.NoData, `x509.decode("` + cert + `").Subject.CommonName`, "modwright.test", nil, ""},
		{cel.NoData, `x509.decode("` + cert + `").PublicKey.E`, int64(65537), nil, ""},
		{cel.NoData, `x509.decode("nope")`, nil, nil, "failed to decode PEM block"},
		{cel.NoData, `time.now() > timestamp("2020-01-01T00:00:00Z")`, true, nil, ""},
		{cel.NoData, `string(time.truncate(timestamp("2026-11-29T10:47:13Z"), duration("1h")))`, "2026-11-29T10:00:00Z", nil, ""},
		{cel.NoData, `time.toCron(timestamp("2026-11-29T10:47:13Z"))`, "47 10 29 11 0", nil, ""},
		{cel.NoData, `math.round(3.14159, 2)`, 3.14, nil, ""},
		{cel.NoData, `sha256("a") == hash.sha256("a") && md5("a") == "0cc175b9c0f1b6a831c399e269772661"`, true, nil, ""},
		{cel.NoData, `gzip.decompress(gzip.compress("hello"))`, "hello", nil, ""},
		{cel.NoData, `gzip.compress("a") == gzip.compress("a")`, true, nil, ""},
		{cel.NoData, `gzip.decompress(b"this is not a gzip stream")`, nil, nil, "gzip.decompress: gzip: invalid header"},
		{cel.NoData, `random("[a-c]{5}").matches("^[a-c]{5}$") && random().matches("^[0-9a-z]{8}$") && random.random("x+(y|z)?").matches("^x{1,11}[yz]?$")`, true, nil, ""},
		{cel.NoData, `random("a{1000}b{1000}c{1000}d{1000}e{1000}")`, nil, nil, "may give 5000 bytes or more (at most 4096)"},
		{cel.NoData, `random("(")`, nil, nil, "random: error parsing regexp"},
		{cel.NoData, `listObjToMap([{"k": "a"}, {"k": "b"}], [{"v": 1}, {"v": 2}], "k", "v").b`, int64(2), nil, ""},
		{cel.NoData, `transform.listObjToMap([{"k": "a"}], [{}], "k", "v").a == null`, true, nil, ""},
		{cel.NoData, `listObjToMap([{"k": 1}], [{"v": 1}], "k", "v")`, nil, nil, "the passed key name cannot be handled as a string"},
		{cel.NoData, `listObjToMap([{"k": "a"}], [], "k", "v")`, nil, nil, "must take lists of equal length"},
	} {
		scope := tc.scope
		if scope == cel.NoData {
			scope = cel.ClusterData // the parsing libraries come with the data ones
		}
		p, ds := cel.Language{KyvernoLibs: true, KyvernoData: scope}.CompileExpr(env, tc.src)
		if ds != nil {
			t.Errorf("%s: %v", tc.src, ds)
			continue
		}
		f := &fakeData{}
		act := &lang.Activation{Vars: map[string]any{}}
		cel.BindKyvernoData(act.Vars, f)
		got, err := p.Eval(context.Background(), act)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want an error saying %q", tc.src, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.src, err)
		default:
			if n, ok := got.(json.Number); ok {
				if i, err := n.Int64(); err == nil {
					got = i
				} else {
					got, _ = n.Float64()
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.src, diff)
			}
			if diff := cmp.Diff(tc.calls, f.calls); diff != "" {
				t.Errorf("%s: calls (-want +got):\n%s", tc.src, diff)
			}
		}
	}
	// A reader's sentinel error stays in the chain.
	p, _ := cel.Language{KyvernoData: cel.ClusterData}.CompileExpr(env, `resource.Get("v1", "configmaps", "team", "offline")`)
	act := &lang.Activation{Vars: map[string]any{}}
	cel.BindKyvernoData(act.Vars, &fakeData{})
	if _, err := p.Eval(context.Background(), act); !errors.Is(err, lang.ErrNoReader) {
		t.Errorf("error %v: ErrNoReader is not in its chain", err)
	}
	// The forms of the other scope do not compile, nor the libraries
	// without KyvernoData.
	for _, tc := range []struct {
		scope cel.DataScope
		src   string
	}{
		{cel.ClusterData, `resource.Get("v1", "configmaps", "cm")`},
		{cel.NamespacedData, `resource.Get("v1", "configmaps", "team", "cm")`},
		{cel.NoData, `resource.Get("v1", "configmaps", "team", "cm")`},
		{cel.NoData, `json.unmarshal("{}")`},
	} {
		if _, ds := (cel.Language{KyvernoData: tc.scope}).CompileExpr(&lang.Env{Name: "x", Vars: []lang.Var{{Name: cel.VarObject}}}, tc.src); ds == nil {
			t.Errorf("scope %d: %s compiles", tc.scope, tc.src)
		}
	}
}

// testCert is a self-signed RSA certificate, PEM-encoded with its line
// breaks escaped for a CEL string literal.
func testCert(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "modwright.test"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<32, 0)}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), "\n", `\n`)
}

// TestGunzipBounds: gzip.decompress gives at most MaxGunzip bytes, and
// what it gives costs, so that the budget stops an expression inflating
// a small stream again and again.
func TestGunzipBounds(t *testing.T) {
	gz := func(n int) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		_, _ = w.Write(make([]byte, n))
		_ = w.Close()
		return b.Bytes()
	}
	env := &lang.Env{Name: "kyverno", Vars: []lang.Var{{Name: cel.VarObject}, {Name: cel.VarResource}, {Name: cel.VarImageData},
		{Name: cel.VarHTTP}, {Name: cel.VarGlobalContext}}}
	obj := map[string]any{"bomb": gz(cel.MaxGunzip + 1), "mib": gz(cel.MaxGunzip)}
	for _, tc := range []struct{ src, err string }{
		{`gzip.decompress(object.bomb).size()`, "the stream holds more than 1048576 bytes"},
		{`gzip.decompress(object.mib).size() == 1048576`, ""},
		{`[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12].all(i, gzip.decompress(object.mib).size() > 0)`, "cost"},
	} {
		p, ds := cel.Language{KyvernoLibs: true, KyvernoData: cel.ClusterData}.CompileExpr(env, tc.src)
		if ds != nil {
			t.Fatalf("%s: %v", tc.src, ds)
		}
		act := &lang.Activation{Object: obj, Vars: map[string]any{}}
		cel.BindKyvernoData(act.Vars, &fakeData{})
		got, err := p.Eval(context.Background(), act)
		switch {
		case tc.err == "" && (err != nil || got != true):
			t.Errorf("%s: %v, %v", tc.src, got, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want an error saying %q", tc.src, err, tc.err)
		}
	}
}
