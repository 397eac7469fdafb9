package e2e

import (
	"os"
	"testing"

	"github.com/modwright/modwright/internal/cli"
)

// TestMain makes this test binary a CUE worker when the operator, running
// in this process, starts one (os.Args[1] is cli.WorkerArg).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == cli.WorkerArg {
		os.Exit(cli.RunWorker())
	}
	os.Exit(m.Run())
}
