package webhook

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

// base64Cases are the lengths around the fast loop's edges (0-15), every
// byte value, and a patch as the dragnet encodes them.
func base64Cases() [][]byte {
	var cases [][]byte
	for n := range 16 {
		cases = append(cases, bytes.Repeat([]byte{0xA5}, n))
	}
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	cases = append(cases, all, all[1:], all[2:])
	cases = append(cases, []byte(`[{"op":"replace","path":"/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration","value":"{\"apiVersion\":\"v1\"}"}]`))
	return cases
}

func TestAppendBase64(t *testing.T) {
	for _, src := range base64Cases() {
		checkAppendBase64(t, []byte("prefix:"), src)
		checkAppendBase64(t, nil, src)
	}
}

// checkAppendBase64 checks appendBase64 against encoding/base64, and
// that it leaves dst's bytes as they were.
func checkAppendBase64(t *testing.T, dst, src []byte) {
	t.Helper()
	prefix := string(dst)
	want := base64.StdEncoding.AppendEncode([]byte(prefix), src)
	got := appendBase64(dst, src)
	if !bytes.Equal(got, want) {
		t.Fatalf("appendBase64(%q, % x) = %q, encoding/base64 gives %q", prefix, src, got, want)
	}
	if !strings.HasPrefix(string(got), prefix) {
		t.Fatalf("appendBase64 changed dst %q", prefix)
	}
}

func FuzzAppendBase64(f *testing.F) {
	for _, src := range base64Cases() {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		checkAppendBase64(t, []byte("x"), src)
	})
}

func BenchmarkAppendBase64(b *testing.B) {
	src := bytes.Repeat([]byte(`{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\"}`), 60)
	dst := make([]byte, 0, 2*len(src))
	b.SetBytes(int64(len(src)))
	b.Run("appendBase64", func(b *testing.B) {
		for b.Loop() {
			dst = appendBase64(dst[:0], src)
		}
	})
	b.Run("encoding/base64", func(b *testing.B) {
		for b.Loop() {
			dst = base64.StdEncoding.AppendEncode(dst[:0], src)
		}
	})
}
