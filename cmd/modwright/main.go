// Command modwright is the one binary: wiring only.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/modwright/modwright/internal/cli"
	// A help request is answered, and the process exits, while this package
	// initializes: before the engines' packages do.
	_ "github.com/modwright/modwright/internal/quickhelp"
	"github.com/modwright/modwright/internal/startgc"
)

func main() {
	startgc.Restore()
	// The first SIGINT or SIGTERM cancels the context, with the signal as
	// its cause; a second one gets the default behaviour (exit at once).
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		signal.Stop(sigs)
		cancel(cli.Interrupted{Signal: s})
	}()
	code := cli.ExecuteContext(ctx, os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	os.Exit(code)
}
