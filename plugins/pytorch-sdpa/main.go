// Command flashcore-backend-pytorch-sdpa measures PyTorch's
// scaled_dot_product_attention: its own dispatch and each SDPBackend pinned
// (README.md).
//
// Where to start: backend.go configures the shared Python bridge
// (internal/bridge) with this plugin's worker module, sdpa_backend.py,
// which is embedded in the binary.
package main

import "github.com/flashcore/bench/sdk"

func main() { sdk.Serve(New) }
