// Command flashcore-backend-cuda-scalar is the cuda-scalar plugin (package cudascalar) as a
// binary of its own. The multi-call binaries of cmd/flashcore-plugins and
// cmd/flashcore-plugins-cuda hold the same plugin.
package main

import (
	cudascalar "github.com/flashcore/bench/plugins/cuda-scalar"
	"github.com/flashcore/bench/sdk"
)

func main() { sdk.Serve(cudascalar.New) }
