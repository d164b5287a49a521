// Command flashcore-backend-triton is the triton plugin (package triton) as a
// binary of its own. The multi-call binaries of cmd/flashcore-plugins and
// cmd/flashcore-plugins-cuda hold the same plugin.
package main

import (
	triton "github.com/flashcore/bench/plugins/triton"
	"github.com/flashcore/bench/sdk"
)

func main() { sdk.Serve(triton.New) }
