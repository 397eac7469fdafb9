package cli

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
)

// serve's --gc-percent (bounded by --gc-max-headroom) applies unless GOGC
// is set; the log says which, and MODWRIGHT_GC_PERCENT sets the flag.
func TestServeGCPercent(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	current := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }

	cmd := newServeCmdWith(Streams{}, &serveOptions{})
	if got := cmd.Flags().Lookup("gc-percent").DefValue; got != "400" {
		t.Errorf("--gc-percent defaults to %s", got)
	}
	o := &serveOptions{}
	cmd = newServeCmdWith(Streams{}, o)
	env := map[string]string{"MODWRIGHT_GC_PERCENT": "250"}
	if err := bindEnv(cmd.Flags(), func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil || o.gcPercent != 250 {
		t.Fatalf("MODWRIGHT_GC_PERCENT: %d, %v", o.gcPercent, err)
	}
	for _, tc := range []struct {
		flag string
		want uint64
		ok   bool
	}{{"64Mi", 64 << 20, true}, {"0", 0, true}, {"1G", 1e9, true}, {"-1Mi", 0, false}, {"lots", 0, false}} {
		got, err := headroomBytes("gc-max-headroom", tc.flag)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("--gc-max-headroom %s: %d, %v; want %d (ok %v)", tc.flag, got, err, tc.want, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--gc-max-headroom") {
			t.Errorf("--gc-max-headroom %s: the error %q does not name the flag", tc.flag, err)
		}
	}
	for flag, want := range map[string]string{"gc-max-headroom": "16Mi", "gc-bulk-headroom": "32Mi"} {
		if got := cmd.Flags().Lookup(flag).DefValue; got != want {
			t.Errorf("--%s defaults to %s, want %s", flag, got, want)
		}
	}
	if widenForBulk(nil, 32<<20) != nil {
		t.Error("widenForBulk without a tuner (GOGC set): want nil")
	}

	for _, tc := range []struct {
		gogc   map[string]string
		want   int
		logged string
	}{
		{nil, 400, `"gcPercent":400`},
		{map[string]string{"GOGC": ""}, 400, `"gcPercent":400`}, // empty: Go's default, as if unset
		{map[string]string{"GOGC": "150"}, 100, `"GOGC":"150"`},
	} {
		debug.SetGCPercent(100)
		var logs bytes.Buffer
		log, err := newLogger("json", 0, &logs)
		if err != nil {
			t.Fatal(err)
		}
		tu := applyGCPercent(400, 64<<20, func(k string) (string, bool) { v, ok := tc.gogc[k]; return v, ok }, log)
		if got := current(); got != tc.want || !strings.Contains(logs.String(), tc.logged) {
			t.Errorf("GOGC %v: GC percent %d, want %d; log %s", tc.gogc, got, tc.want, logs.String())
		}
		if (tu == nil) != (tc.gogc["GOGC"] != "") {
			t.Errorf("GOGC %v: tuner %v", tc.gogc, tu)
		}
		if tu != nil {
			tu.Stop()
		}
	}
}
