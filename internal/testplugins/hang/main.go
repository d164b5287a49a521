// Command hang is a test-only plugin that never answers Run: it blocks
// forever and ignores the call's context, as a backend does when its kernel
// never finishes. Everything else behaves.
package main

import (
	"context"
	"time"

	"github.com/flashcore/bench/internal/testplugins/testbackend"
	"github.com/flashcore/bench/sdk"
)

func main() {
	sdk.Serve(func() sdk.Backend {
		return testbackend.New(testbackend.Options{
			Name:        "test-hang",
			Description: "test only: blocks forever in Run",
			BeforeRun: func(context.Context) {
				for {
					time.Sleep(time.Hour)
				}
			},
		})
	})
}
