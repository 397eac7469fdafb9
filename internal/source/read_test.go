//go:build unix

package source

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/modwright/modwright/internal/rules"
)

// mkfifo makes a named pipe in dir; nobody ever writes to it, so opening it
// for reading would block forever.
func mkfifo(t *testing.T, dir, name string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("no named pipes in the file system on Windows")
	}
	p := filepath.Join(dir, name)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// withDeadline fails the test instead of hanging when f blocks.
func withDeadline(t *testing.T, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("blocked reading")
		return nil
	}
}

// Only regular files are read: a FIFO (named or found in a directory) or a
// device is refused without being opened, and input is bounded.
func TestReadOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := mkfifo(t, dir, "rules.yaml")
	sub := t.TempDir()
	mkfifo(t, sub, "in-dir.yaml")
	for _, tc := range []struct {
		name, path string
	}{
		{"named FIFO", fifo},
		{"FIFO in a directory", sub},
		{"device", "/dev/zero"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat(tc.path); err != nil {
				t.Skip(err)
			}
			err := withDeadline(t, func() error { _, err := ReadPaths([]string{tc.path}, nil); return err })
			if !errors.Is(err, ErrNotRegular) || !errors.Is(err, ErrInvalidManifest) {
				t.Fatalf("err = %v, want ErrNotRegular", err)
			}
			if !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("message: %v", err)
			}
		})
	}

	// A reload from a FIFO fails at once and keeps the snapshot; the next
	// reload still works.
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte(goodRule), 0o644); err != nil {
		t.Fatal(err)
	}
	store := &Store{}
	fs := &FileSource{Paths: []string{good}, Kinds: testKinds(), Store: store, Log: logr.Discard()}
	if _, err := fs.Load(); err != nil {
		t.Fatal(err)
	}
	snap := store.Current()
	fs.Paths = []string{fifo}
	if err := withDeadline(t, func() error { _, err := fs.Load(); return err }); !errors.Is(err, ErrNotRegular) || store.Current() != snap {
		t.Fatalf("FIFO reload: err=%v, snapshot replaced=%v", err, store.Current() != snap)
	}
	fs.Paths = []string{good}
	if _, err := fs.Load(); err != nil || store.Current() == snap {
		t.Fatalf("reload after the FIFO: %v", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestReadLimited(t *testing.T) {
	_, err := ReadPaths([]string{"-"}, zeros{})
	if !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrInvalidManifest) {
		t.Fatalf("endless stdin: err = %v, want ErrTooLarge", err)
	}
	data, err := ReadLimited("x", io.LimitReader(zeros{}, MaxManifestBytes))
	if err != nil || len(data) != MaxManifestBytes {
		t.Fatalf("exactly the limit: %d bytes, %v", len(data), err)
	}
}

// Two documents defining the same namespace/name: an error naming both,
// and a FileSource publishes nothing (a Reject rule shadowed by a Patch
// rule must not serve silently).
func TestDuplicateRules(t *testing.T) {
	dir := t.TempDir()
	reject := "apiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata: {name: r, namespace: ns}\nspec:\n  type: Reject\n  match: [{select: '$.kind'}]\n"
	patch := "apiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata: {name: r, namespace: ns}\nspec:\n  type: Patch\n  match: [{select: '$.kind'}]\n  patch: [{op: add, path: /x, value: '1'}]\n"
	for name, text := range map[string]string{"a.yaml": reject, "b.yaml": patch} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	docs, err := ReadPaths([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := LoadRules(docs, testKinds())
	if len(res.Duplicates) != 1 || !errors.Is(res.Duplicates[0], ErrDuplicateRule) || len(res.Rules) != 1 {
		t.Fatalf("duplicates: %v, rules: %d", res.Duplicates, len(res.Rules))
	}
	msg := res.Duplicates[0].Error()
	for _, want := range []string{"ns/r", "a.yaml:1", "b.yaml:1"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not name %q", msg, want)
		}
	}
	store := &Store{}
	fs := &FileSource{Paths: []string{dir}, Kinds: testKinds(), Store: store, Log: logr.Discard()}
	if _, err := fs.Load(); !errors.Is(err, ErrDuplicateRule) || store.Ready() {
		t.Fatalf("FileSource: err=%v, published=%v", err, store.Ready())
	}
}

// A YAML boolean (or number) in a string field says which field, with its
// index, that it must be a string, and how to quote it (KubeMod's own
// IsMatch tests write matchValue: false).
func TestLoadModRuleTypeMismatch(t *testing.T) {
	text := "apiVersion: api.kubemod.io/v1beta1\nkind: ModRule\nmetadata: {name: r, namespace: ns}\nspec:\n  type: Reject\n  match:\n  - select: '$.kind'\n  - select: '$.spec.x'\n    matchValue: false\n"
	docs, err := ParseManifest("r.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	res := LoadRules(docs, testKinds())
	if len(res.Errors) != 1 {
		t.Fatalf("errors: %v", res.Errors)
	}
	err = res.Errors[0]
	var ce *rules.CompileError
	if !errors.As(err, &ce) || !errors.Is(err, rules.ErrUndecodable) || len(ce.Errors) != 1 || ce.Errors[0].Field != "spec.match[1].matchValue" {
		t.Fatalf("err = %v, want an undecodable rule at spec.match[1].matchValue", err)
	}
	want := `r.yaml:9:17: ModRule ns/r: spec.match[1].matchValue: must be a string, not a boolean (false); YAML reads an unquoted false as a boolean: quote it, as in matchValue: "false"`
	if err.Error() != want {
		t.Errorf("message:\n got %s\nwant %s", err, want)
	}
}
