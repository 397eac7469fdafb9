package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// TestExamples runs the README's main command on examples/ and checks the
// output against examples/expected.yaml.
func TestExamples(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := ExecuteContext(context.Background(),
		[]string{"apply", "--rules", "../../examples/rules", "-f", "../../examples/manifests"},
		Streams{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
	if code != 1 {
		t.Errorf("exit code %d, want 1 (the example Service is rejected); stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), `reject-external-ips: "external IPs [192.0.2.10 203.0.113.7] are not allowed"`) {
		t.Errorf("stderr lacks the rejection:\n%s", stderr.String())
	}
	want, err := os.ReadFile("../../examples/expected.yaml")
	if err != nil {
		t.Fatal(err)
	}
	compareOutput(t, want, stdout.Bytes())
}

// TestPostRendererStdin runs apply the way Helm runs a post-renderer: the
// manifests on stdin, the result on stdout.
func TestPostRendererStdin(t *testing.T) {
	in, err := os.ReadFile("../../examples/manifests/web.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := ExecuteContext(context.Background(),
		[]string{"apply", "--rules=../../examples/rules", "-f", "-"},
		Streams{In: bytes.NewReader(in), Out: &stdout, Err: &stderr})
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	want, err := os.ReadFile("../../examples/expected.yaml")
	if err != nil {
		t.Fatal(err)
	}
	compareOutput(t, want, stdout.Bytes())
}
