package testtool

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a test ended (Skip or Fatal)
// instead of ending the real one.
type recorder struct {
	testing.TB
	ended, msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Skipf(format string, args ...any) {
	r.ended, r.msg = "skip", fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.ended, r.msg = "fatal", fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatal(args ...any) {
	r.ended, r.msg = "fatal", fmt.Sprint(args...)
	runtime.Goexit()
}

// run calls ConformanceDir on a recorder, in a goroutine of its own so that
// Skip and Fatal can end it.
func run(t *testing.T, env, probe string) (dir string, r *recorder) {
	r = &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		dir = ConformanceDir(r, "some-set", env, probe)
	}()
	<-done
	return dir, r
}

func TestConformanceDir(t *testing.T) {
	const env = "MODWRIGHT_TESTTOOL_DATA"
	present := t.TempDir()
	missing := filepath.Join(t.TempDir(), "absent")
	for _, tt := range []struct {
		name, dir, require string
		wantEnd            string // "", "skip" or "fatal"
	}{
		{"present", present, "", ""},
		{"present, required", present, "1", ""},
		{"missing", missing, "", "skip"},
		{"missing, required", missing, "1", "fatal"},
		{"missing, other value", missing, "true", "skip"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(env, tt.dir)
			t.Setenv("MODWRIGHT_REQUIRE_CONFORMANCE", tt.require)
			dir, r := run(t, env, ".")
			if r.ended != tt.wantEnd {
				t.Fatalf("ended with %q (%s), want %q", r.ended, r.msg, tt.wantEnd)
			}
			if tt.wantEnd == "" {
				if dir != tt.dir {
					t.Errorf("dir = %q, want %q", dir, tt.dir)
				}
				return
			}
			for _, want := range []string{"some-set", missing, env, "MODWRIGHT_REQUIRE_CONFORMANCE=1"} {
				if !strings.Contains(r.msg, want) {
					t.Errorf("message %q does not name %q", r.msg, want)
				}
			}
		})
	}

	// Without the variable: beside the repository.
	t.Setenv(env, "")
	t.Setenv("MODWRIGHT_REQUIRE_CONFORMANCE", "")
	_, r := run(t, env, "no-such-probe")
	want := filepath.Join("shared", "conformance", "some-set")
	if r.ended != "skip" || !strings.Contains(r.msg, want) {
		t.Errorf("ended with %q (%s), want a skip naming %s", r.ended, r.msg, want)
	}
}
