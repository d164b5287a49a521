// Command doublefork is a test-only plugin that leaves a stray behind: at
// start it starts a child that starts a grandchild in a process group of
// its own and exits at once, so the grandchild is orphaned; it sleeps
// forever, deaf to SIGTERM (see package stray). It also leaves a directory
// in its temporary directory. With FLASHCORE_TEST_STRAY_HANG=1 its Run
// blocks forever. Otherwise it behaves as echo does.
package main

import (
	"context"

	"github.com/flashcore/bench/internal/testplugins/stray"
	"github.com/flashcore/bench/internal/testplugins/testbackend"
	"github.com/flashcore/bench/sdk"
)

func main() {
	stray.Leave(stray.DoubleFork)
	sdk.Serve(func() sdk.Backend {
		return testbackend.New(testbackend.Options{
			Name:        "test-doublefork",
			Description: "test only: leaves an orphaned grandchild in a process group of its own",
			BeforeRun:   func(context.Context) { stray.Hang() },
		})
	})
}
