package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// The Go memory limit is derived from the container's, less the CUE
// workers' share, unless GOMEMLIMIT is set, the ratio is 0 or nothing
// sensible is left; the log says which applies.
func TestServeMemoryLimit(t *testing.T) {
	const mi = 1 << 20
	for _, tc := range []struct {
		name      string
		env       map[string]string
		ratio     float64
		reserved  uint64
		container uint64
		err       error
		want      int64 // 0: none set
		logged    string
	}{
		{"the chart's container", nil, 0.9, // 0.9 x (384 - 2 x 80) MiB
			2 * (64*mi + cueWorkerOverhead), 384 * mi, nil, 211392921, `"msg":"memory limit: from the container's","bytes":211392921`},
		{"no CUE workers", nil, 0.5, 0, 256 * mi, nil, 128 * mi, `"bytes":134217728`},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "230MiB"}, 0.9, 0, 384 * mi, nil, 0, `GOMEMLIMIT is set and applies`},
		{"GOMEMLIMIT empty", map[string]string{"GOMEMLIMIT": ""}, 0.9, 0, 100 * mi, nil, 90 * mi, `from the container's`},
		{"ratio 0", nil, 0, 0, 384 * mi, nil, 0, `--memory-limit-ratio=0`},
		{"no limit", nil, 0.9, 0, 0, memlimit.ErrNoLimit, 0, `the container has no memory limit`},
		{"cgroup v1's no limit", nil, 1, 0, 9223372036854771712, nil, 0, `the container has no memory limit`},
		{"larger than an int64", nil, 1, 0, 1<<64 - 1, nil, 0, `the container has no memory limit`},
		{"no cgroup", nil, 0.9, 0, 0, fmt.Errorf("reading: %w", memlimit.ErrNoCgroup), 0, `the container has no memory limit`},
		{"unreadable", nil, 0.9, 0, 0, errors.New("permission denied"), 0, `could not be read)","error":"permission denied"`},
		{"all to CUE", nil, 0.9, 400 * mi, 384 * mi, nil, 0, `the CUE workers may take all`},
		{"too little left", nil, 0.9, 350 * mi, 384 * mi, nil, 0, `too small to set one`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			log, err := newLogger("json", 0, &logs)
			if err != nil {
				t.Fatal(err)
			}
			var set []int64
			m := memoryLimit{ratio: tc.ratio, reserved: tc.reserved,
				lookup:    func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok },
				container: func() (uint64, error) { return tc.container, tc.err },
				set:       func(n int64) int64 { set = append(set, n); return 0 }}
			got := m.apply(log)
			if got != tc.want || !strings.Contains(logs.String(), tc.logged) {
				t.Errorf("limit %d, want %d; log %s, want it to hold %s", got, tc.want, logs.String(), tc.logged)
			}
			if want := []int64{tc.want}; (tc.want == 0 && len(set) != 0) || (tc.want != 0 && (len(set) != 1 || set[0] != want[0])) {
				t.Errorf("SetMemoryLimit calls %v, want %v", set, tc.want)
			}
		})
	}
}

func TestCUEReserved(t *testing.T) {
	const mi = 1 << 20
	for _, tc := range []struct {
		workers int
		memory  int64
		want    uint64
	}{
		{-1, 64 * mi, 0}, // in the server
		{0, 64 * mi, 3 * (64*mi + cueWorkerOverhead)}, // the default count (3 here)
		{2, 64 * mi, 2 * (64*mi + cueWorkerOverhead)},
		{2, 0, 2 * cueWorkerOverhead},
		{1 << 40, 1 << 40, math.MaxUint64}, // would wrap around
		{math.MaxInt, math.MaxInt64, math.MaxUint64},
	} {
		if got := cueReserved(tc.workers, tc.memory, 3); got != tc.want {
			t.Errorf("cueReserved(%d, %d): %d, want %d", tc.workers, tc.memory, got, tc.want)
		}
	}
}

// --memory-limit-ratio is checked and set from the environment.
func TestServeMemoryLimitRatioFlag(t *testing.T) {
	o := &serveOptions{}
	cmd := newServeCmdWith(Streams{}, o)
	if got := cmd.Flags().Lookup("memory-limit-ratio").DefValue; got != "0.9" {
		t.Errorf("--memory-limit-ratio defaults to %s", got)
	}
	env := map[string]string{"MODWRIGHT_MEMORY_LIMIT_RATIO": "0.75"}
	if err := bindEnv(cmd.Flags(), func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil || o.memLimitRatio != 0.75 {
		t.Fatalf("MODWRIGHT_MEMORY_LIMIT_RATIO: %v, %v", o.memLimitRatio, err)
	}
	for _, r := range []string{"1.5", "-0.1", "NaN"} {
		var out, errOut bytes.Buffer
		code := ExecuteContext(context.Background(), []string{"serve", "--standalone", "--rules", "x.yaml", "--memory-limit-ratio", r}, Streams{In: strings.NewReader(""), Out: &out, Err: &errOut})
		if code == 0 || !strings.Contains(errOut.String(), "--memory-limit-ratio must be between 0 and 1") {
			t.Errorf("--memory-limit-ratio %s: exit %d, %s", r, code, errOut.String())
		}
	}
}
