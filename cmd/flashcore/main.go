// Command flashcore benchmarks attention kernels against each other. All of
// its behaviour lives in package cli; main only wires the process to it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/flashcore/bench/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "flashcore:", err)
	}
	os.Exit(cli.ExitCode(err))
}
