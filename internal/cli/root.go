package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// ExitError carries a process exit code.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Streams are a command's standard streams.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// NewRoot builds the modwright command tree.
func NewRoot(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "modwright",
		Short: "KubeMod-compatible admission rules: patch or reject Kubernetes objects",
		Long: `modwright evaluates KubeMod ModRules (api.kubemod.io/v1beta1): declarative rules that
patch or reject Kubernetes objects before they reach the cluster. The same rules
run offline with 'modwright apply' (in CI, or as a Helm post-renderer).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.AddCommand(newApplyCmd(s), newServeCmd(s), newTestCmd(s), newExplainCmd(s), newLintCmd(s), newKRMCmd(s), newSandboxCmd(s))
	return root
}

// ExecuteContext runs the command line and returns the process exit code.
func ExecuteContext(ctx context.Context, args []string, s Streams) int {
	root := NewRoot(s)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintln(s.Err, "error:", ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintln(s.Err, "error:", err)
	return 2
}
