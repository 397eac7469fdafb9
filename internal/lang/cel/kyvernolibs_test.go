package cel_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modwright/modwright/internal/lang"
	"github.com/modwright/modwright/internal/lang/cel"
)

// TestKyvernoLibs: Kyverno's image and user libraries, as its CEL
// policies read them.
func TestKyvernoLibs(t *testing.T) {
	env := &lang.Env{Name: "kyverno", Vars: []lang.Var{{Name: cel.VarObject}}}
	for _, tc := range []struct {
		src  string
		want any
		err  string
	}{
		{`image("nginx").registry()`, "index.docker.io", ""},
		{`image("nginx").repository()`, "library/nginx", ""},
		{`image("nginx").tag()`, "latest", ""},
		{`parseImageReference("corp.reg.com:5000/team/app:1.2").registry()`, "corp.reg.com:5000", ""},
		{`parseImageReference("corp.reg.com/team/app:1.2").repository()`, "team/app", ""},
		{`parseImageReference("ghcr.io/a/b@sha256:` + strings.Repeat("a", 64) + `").containsDigest()`, true, ""},
		{`parseImageReference("ghcr.io/a/b@sha256:` + strings.Repeat("a", 64) + `").digest()`, "sha256:" + strings.Repeat("a", 64), ""},
		{`parseImageReference("ghcr.io/a/b:v1").identifier()`, "v1", ""},
		{`parseImageReference("ghcr.io/a/b:v1").digest()`, "", ""},
		{`isImage("ghcr.io/a/b:v1") && !isImage("UPPER/Case::")`, true, ""},
		{`image("::bad")`, nil, "could not parse reference"},
		{`parseServiceAccount("system:serviceaccount:team:builder").Namespace`, "team", ""},
		{`parseServiceAccount("system:serviceaccount:team:builder").Name`, "builder", ""},
		{`parseServiceAccount("alice").Name`, "", ""},
	} {
		p, ds := cel.Language{KyvernoLibs: true}.CompileExpr(env, tc.src)
		if ds != nil {
			t.Errorf("%s: %v", tc.src, ds)
			continue
		}
		got, err := p.Eval(context.Background(), &lang.Activation{})
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want an error saying %q", tc.src, err, tc.err)
			}
		case err != nil || got != tc.want:
			t.Errorf("%s = %v (%v), want %v", tc.src, got, err, tc.want)
		}
	}
	if _, ds := (cel.Language{}).CompileExpr(env, `image("nginx").registry()`); ds == nil {
		t.Error("without KyvernoLibs, image() compiles")
	}
}
