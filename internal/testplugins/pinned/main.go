// Command pinned is a test-only plugin that claims to measure on a GPU, so
// that flashcore run --devices gives it a queue per GPU on a machine with
// none. It reports the CUDA_VISIBLE_DEVICES it was started with as the
// fact cuda_visible_devices of every row, and it dies at start when that
// is the GPU named by $FLASHCORE_TEST_DEAD_GPU, as a plugin on a GPU that
// fell off the bus does. Otherwise it behaves like echo.
package main

import (
	"fmt"
	"os"

	"github.com/flashcore/bench/internal/testplugins/testbackend"
	"github.com/flashcore/bench/sdk"
)

// DeadGPUEnv names the GPU (as CUDA_VISIBLE_DEVICES would) this plugin
// refuses to start on.
const DeadGPUEnv = "FLASHCORE_TEST_DEAD_GPU"

func main() {
	visible := os.Getenv("CUDA_VISIBLE_DEVICES")
	if dead := os.Getenv(DeadGPUEnv); dead != "" && dead == visible {
		fmt.Fprintf(os.Stderr, "test-pinned: GPU %s is gone\n", visible)
		os.Exit(1)
	}
	sdk.Serve(func() sdk.Backend {
		return testbackend.New(testbackend.Options{
			Name:         "test-pinned",
			Description:  "test only: claims a GPU, reports CUDA_VISIBLE_DEVICES, writes Q as its output",
			Device:       &sdk.Device{Kind: "gpu", Name: "test GPU " + visible},
			PrepareFacts: func() map[string]string { return map[string]string{"cuda_visible_devices": visible} },
		})
	})
}
