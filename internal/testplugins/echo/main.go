// Command echo is a test-only plugin that behaves: it loads its inputs,
// reports their real SHA-256, writes every output element (a copy of Q, not
// attention) and takes real timed samples. Transport tests use it as the
// plugin that does nothing wrong.
package main

import (
	"github.com/flashcore/bench/internal/testplugins/testbackend"
	"github.com/flashcore/bench/sdk"
)

func main() {
	sdk.Serve(func() sdk.Backend {
		return testbackend.New(testbackend.Options{
			Name:        "test-echo",
			Ops:         []string{"attention", "rmsnorm"},
			Description: "test only: writes Q as its output",
		})
	})
}
