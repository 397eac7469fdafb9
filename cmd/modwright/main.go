// Command modwright is the one binary: wiring only.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/modwright/modwright/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.ExecuteContext(ctx, os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
