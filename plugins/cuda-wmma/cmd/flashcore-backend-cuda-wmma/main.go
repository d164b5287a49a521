// Command flashcore-backend-cuda-wmma is the cuda-wmma plugin (package cudawmma) as a
// binary of its own. The multi-call binaries of cmd/flashcore-plugins and
// cmd/flashcore-plugins-cuda hold the same plugin.
package main

import (
	cudawmma "github.com/flashcore/bench/plugins/cuda-wmma"
	"github.com/flashcore/bench/sdk"
)

func main() { sdk.Serve(cudawmma.New) }
