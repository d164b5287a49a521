// Command flashcore-backend-cuda-file is the cuda-file plugin (package cudafile) as a
// binary of its own. The multi-call binaries of cmd/flashcore-plugins and
// cmd/flashcore-plugins-cuda hold the same plugin.
package main

import (
	cudafile "github.com/flashcore/bench/plugins/cuda-file"
	"github.com/flashcore/bench/sdk"
)

func main() { sdk.Serve(cudafile.New) }
