// Command flashcore-backend-cuda-hopper is the cuda-hopper plugin (package cudahopper) as a
// binary of its own. The multi-call binaries of cmd/flashcore-plugins and
// cmd/flashcore-plugins-cuda hold the same plugin.
package main

import (
	cudahopper "github.com/flashcore/bench/plugins/cuda-hopper"
	"github.com/flashcore/bench/sdk"
)

func main() { sdk.Serve(cudahopper.New) }
