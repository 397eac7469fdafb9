//go:build unix

package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// run runs a command line and fails the test instead of hanging.
func runBounded(t *testing.T, ctx context.Context, in io.Reader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- ExecuteContext(ctx, args, Streams{In: in, Out: &out, Err: &errb}) }()
	select {
	case code = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%v did not return", args)
	}
	return code, out.String(), errb.String()
}

// A one-shot command stops on SIGTERM even when it is stuck (here reading a
// stdin nobody writes to; in real life a rule's template, which Go cannot
// interrupt): exit 128+15 with a message.
func TestInterruptStopsOneShotCommands(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel(Interrupted{Signal: syscall.SIGTERM}) })
	code, _, stderr := runBounded(t, ctx, pr, "apply", "--rules", "../../examples/rules", "-f", "-")
	if code != 128+int(syscall.SIGTERM) || !strings.Contains(stderr, "interrupted by SIGTERM") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// Input that could never end or that names something else than a file is
// refused with exit status 2 and a message, and two definitions of one rule
// are an error naming both files.
func TestApplyRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	rule := func(typ, extra string) string {
		return "apiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata: {name: guard, namespace: default}\nspec:\n  type: " + typ +
			"\n  match: [{select: '$.kind', matchValue: ConfigMap}]\n" + extra
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	reject := write("reject.yaml", rule("Reject", ""))
	shadow := write("shadow.yaml", rule("Patch", "  patch: [{op: add, path: /data/x, value: '\"y\"'}]\n"))
	obj := write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"duplicate rule", []string{"apply", "--rules", reject, "--rules", shadow, "-f", obj},
			[]string{"duplicate rule: ModRule default/guard is defined twice", "reject.yaml:1", "shadow.yaml:1"}},
		{"FIFO rules", []string{"apply", "--rules", fifo, "-f", obj}, []string{"fifo.yaml: not a regular file (a named pipe)"}},
		{"device input", []string{"apply", "--rules", reject, "-f", "/dev/zero"}, []string{"/dev/zero: not a regular file (a character device)"}},
		{"FIFO lint", []string{"lint", fifo}, []string{"not a regular file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runBounded(t, context.Background(), strings.NewReader(""), tc.args...)
			if tc.args[0] == "lint" {
				stderr += stdout // lint reports findings on stdout
			}
			if code == 0 || code == 1 && tc.args[0] == "apply" {
				t.Errorf("exit %d", code)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("output %q does not contain %q", stderr, w)
				}
			}
		})
	}
}
