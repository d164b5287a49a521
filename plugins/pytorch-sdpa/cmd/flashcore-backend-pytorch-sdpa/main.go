// Command flashcore-backend-pytorch-sdpa is the pytorch-sdpa plugin (package pytorchsdpa) as a
// binary of its own. The multi-call binaries of cmd/flashcore-plugins and
// cmd/flashcore-plugins-cuda hold the same plugin.
package main

import (
	pytorchsdpa "github.com/flashcore/bench/plugins/pytorch-sdpa"
	"github.com/flashcore/bench/sdk"
)

func main() { sdk.Serve(pytorchsdpa.New) }
