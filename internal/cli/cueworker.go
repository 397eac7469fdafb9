package cli

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/spf13/cobra"

	cuelang "github.com/modwright/modwright/internal/lang/cue"
)

// WorkerArg is the first argument of a CUE worker process: serve runs
// CUE programs in workers it starts as `<this binary> cue-worker` (a hidden
// command). A test binary that serves in its own process makes TestMain
// call RunWorker when os.Args[1] is WorkerArg.
const WorkerArg = "cue-worker"

// RunWorker is a CUE worker's process: it serves its parent's requests on
// stdin and stdout (cuelang.ServeWorker) and returns the exit status. Its
// out-of-memory score is raised first, so that the kernel, short of
// memory, kills a worker before the server.
func RunWorker() int {
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	if err := cuelang.ServeWorker(os.Stdin, os.Stdout, os.Exit); err != nil {
		fmt.Fprintln(os.Stderr, "cue-worker:", err)
		return 1
	}
	return 0
}

func newCUEWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    WorkerArg,
		Short:  "A CUE worker process of serve (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if code := RunWorker(); code != 0 {
				return &ExitError{Code: code, Err: fmt.Errorf("the CUE worker failed")}
			}
			return nil
		},
	}
}

// cueLanguage is the CUE serve compiles with: programs evaluated in
// --cue-workers worker processes of this binary, each stopped at its
// deadline, after --cue-timeout or past --cue-worker-memory; with --cue-workers=-1, in this
// process (an evaluation past its deadline then runs on, abandoned).
// The returned function stops the workers.
func (o *serveOptions) cueLanguage() (cuelang.Language, func(), error) {
	if o.cueWorkers < 0 {
		return cuelang.Language{}, func() {}, nil
	}
	command := o.cueWorkerCommand
	if command == nil {
		exe, err := os.Executable()
		if err != nil {
			return cuelang.Language{}, nil, fmt.Errorf("finding this binary for the CUE workers: %w", err)
		}
		command = func() *exec.Cmd {
			cmd := exec.Command(exe, WorkerArg)
			// One evaluation at a time: a runaway program burns one CPU.
			cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
			return cmd
		}
	}
	ws := cuelang.NewWorkers(cuelang.WorkerOptions{Command: command, Max: o.cueWorkers, MemoryLimit: o.cueWorkerMemory, Timeout: o.cueTimeout})
	return cuelang.Language{Workers: ws}, ws.Close, nil
}
