// Command setsid is a test-only plugin that leaves a stray behind: at
// start it starts a child whose child calls setsid and sleeps forever,
// deaf to SIGTERM (see package stray). It also leaves a directory in its
// temporary directory. With FLASHCORE_TEST_STRAY_HANG=1 its Run blocks
// forever. Otherwise it behaves as echo does.
package main

import (
	"context"

	"github.com/flashcore/bench/internal/testplugins/stray"
	"github.com/flashcore/bench/internal/testplugins/testbackend"
	"github.com/flashcore/bench/sdk"
)

func main() {
	stray.Leave(stray.Setsid)
	sdk.Serve(func() sdk.Backend {
		return testbackend.New(testbackend.Options{
			Name:        "test-setsid",
			Description: "test only: leaves a grandchild that called setsid",
			BeforeRun:   func(context.Context) { stray.Hang() },
		})
	})
}
