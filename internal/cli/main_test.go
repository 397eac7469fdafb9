package cli

import (
	"os"
	"testing"
)

// TestMain makes this test binary a CUE worker when serve, running in a
// test, starts one (os.Args[1] is WorkerArg).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == WorkerArg {
		os.Exit(RunWorker())
	}
	os.Exit(m.Run())
}
