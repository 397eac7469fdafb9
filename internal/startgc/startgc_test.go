package startgc

import (
	"os"
	"runtime/debug"
	"strconv"
	"testing"
)

// duringInit is what the collector was set to while the packages initialized:
// this file's variables are initialized after startgc.go's.
var duringInit = debug.SetGCPercent(-1)

func TestRestore(t *testing.T) {
	if duringInit != -1 {
		t.Fatalf("during initialization the GC percent was %d, want -1 (off)", duringInit)
	}
	want := 100
	if v, err := strconv.Atoi(os.Getenv("GOGC")); err == nil {
		want = v
	} else if os.Getenv("GOGC") == "off" {
		want = -1
	}
	Restore()
	if got := debug.SetGCPercent(want); got != want {
		t.Fatalf("after Restore the GC percent is %d, want %d (the process's own setting)", got, want)
	}
}
