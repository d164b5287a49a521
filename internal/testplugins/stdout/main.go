// Command stdout is a test-only plugin that breaks the handshake: it prints
// a line to stdout before sdk.Serve, as gorgonia.org/cu's init does when it
// finds no CUDA device, so the host reads that line where it expects the
// handshake.
package main

import (
	"fmt"

	"github.com/flashcore/bench/internal/testplugins/testbackend"
	"github.com/flashcore/bench/sdk"
)

func main() {
	fmt.Println("Error in initialization: simulated banner on stdout")
	sdk.Serve(func() sdk.Backend {
		return testbackend.New(testbackend.Options{
			Name:        "test-stdout",
			Description: "test only: prints to stdout before the handshake",
		})
	})
}
