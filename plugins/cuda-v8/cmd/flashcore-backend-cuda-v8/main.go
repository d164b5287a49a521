// Command flashcore-backend-cuda-v8 is the cuda-v8 plugin (package cudav8) as a
// binary of its own. The multi-call binaries of cmd/flashcore-plugins and
// cmd/flashcore-plugins-cuda hold the same plugin.
package main

import (
	cudav8 "github.com/flashcore/bench/plugins/cuda-v8"
	"github.com/flashcore/bench/sdk"
)

func main() { sdk.Serve(cudav8.New) }
