package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

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
		Short: "Admission rules that patch, reject or warn about Kubernetes objects",
		Long: `modwright evaluates admission rules: declarative rules that patch, reject or warn
about Kubernetes objects before they reach the cluster. It runs the rules teams
already have, unchanged: KubeMod's ModRules, kinitiras' policies, Kubernetes'
admission policies, and its own ModwrightPolicies and ClusterModwrightPolicies (CEL, JMESPath,
Rego or CUE). The same rules run in the cluster ('modwright serve'), offline
('modwright apply', in CI or as a Helm post-renderer; 'modwright krm') and
in tests ('modwright test').`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}")
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.AddCommand(newApplyCmd(s), newAuditCmd(s), newServeCmd(s), newTestCmd(s), newExplainCmd(s), newLintCmd(s), newKRMCmd(s), newSandboxCmd(s), newRulesTestCmd(s), newGraphCmd(s), newValidateCmd(s), newCompileCmd(s), newVersionCmd(s), newCUEWorkerCmd())
	root.Version = readVersion().text()
	for _, c := range root.Commands() {
		if c.Name() == "serve" || c.Name() == "sandbox" {
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[longRunning] = "true"
		}
	}
	return root
}

// Interrupted is the cause of the context given to ExecuteContext when a
// signal asks the process to stop (see cmd/modwright).
type Interrupted struct{ Signal os.Signal }

func (i Interrupted) Error() string { return "interrupted by " + signalName(i.Signal) }

// ExitCode is the shell's convention for a process ended by a signal: 128
// plus the signal's number.
func (i Interrupted) ExitCode() int {
	if n, ok := i.Signal.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 130
}

func signalName(s os.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case os.Interrupt:
		return "SIGINT"
	}
	return s.String()
}

// interruptGrace is how long a one-shot command (apply, lint, test, ...)
// may take to return once interrupted before ExecuteContext gives up on
// it: the process then exits without waiting, even in the middle of a
// rule's template, which Go cannot stop from outside.
const interruptGrace = time.Second

// longRunning marks the commands that shut down gracefully on a signal
// (serve, sandbox): ExecuteContext waits for them however long they take.
const longRunning = "modwright.io/long-running"

// ExecuteContext runs the command line and returns the process exit code.
// When ctx ends with an Interrupted cause, one-shot commands are given
// interruptGrace to return, then the exit code is Interrupted.ExitCode.
func ExecuteContext(ctx context.Context, args []string, s Streams) int {
	root := NewRoot(s)
	root.SetArgs(args)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		if cmd, _, ferr := root.Find(args); ferr == nil && cmd.Annotations[longRunning] == "true" {
			err = <-done
			break
		}
		select {
		case err = <-done:
		case <-time.After(interruptGrace):
		}
		var in Interrupted
		if errors.As(context.Cause(ctx), &in) {
			fmt.Fprintln(s.Err, "error:", in)
			return in.ExitCode()
		}
		if err == nil {
			err = ctx.Err()
		}
	}
	return exitCode(s, err)
}

// exitCode is a command's exit status for its error, which it prints on
// s.Err.
func exitCode(s Streams, err error) int {
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
