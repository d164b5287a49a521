// Command crash is a test-only plugin that dies: in Run it prints
// "boom: simulated crash" to stderr and exits with status 3, as a backend
// does when its driver aborts. Everything before Run behaves.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/flashcore/bench/internal/testplugins/testbackend"
	"github.com/flashcore/bench/sdk"
)

// stderr is the process's own stderr, taken before sdk.Serve forwards
// os.Stderr through the plugin connection, which would lose the message
// when the process exits at once.
var stderr = os.Stderr

func main() {
	sdk.Serve(func() sdk.Backend {
		return testbackend.New(testbackend.Options{
			Name:        "test-crash",
			Description: "test only: exits with status 3 in Run",
			BeforeRun: func(context.Context) {
				fmt.Fprintln(stderr, "boom: simulated crash")
				os.Exit(3)
			},
		})
	})
}
