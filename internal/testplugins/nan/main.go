// Command nan is a test-only plugin whose answer is NaN: Fetch writes a
// quiet NaN into every output element (not the poison pattern, so the
// elements count as written). Its input hash is real, so the only finding
// is the NaN output.
package main

import (
	"github.com/flashcore/bench/internal/testplugins/testbackend"
	"github.com/flashcore/bench/sdk"
)

func main() {
	sdk.Serve(func() sdk.Backend {
		return testbackend.New(testbackend.Options{
			Name:        "test-nan",
			Ops:         []string{"attention", "rmsnorm"},
			Description: "test only: writes NaN into every output element",
			FillOutput:  testbackend.FillNaN,
		})
	})
}
