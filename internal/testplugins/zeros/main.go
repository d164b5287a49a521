// Command zeros is a test-only plugin whose answer is wrong: Fetch writes
// an output of all zeros. Its input hash is real, so the only finding is
// the wrong output.
package main

import (
	"github.com/flashcore/bench/internal/testplugins/testbackend"
	"github.com/flashcore/bench/sdk"
)

func main() {
	sdk.Serve(func() sdk.Backend {
		return testbackend.New(testbackend.Options{
			Name:        "test-zeros",
			Ops:         []string{"attention", "rmsnorm"},
			Description: "test only: writes an all-zero output",
			FillOutput:  testbackend.FillZeros,
		})
	})
}
