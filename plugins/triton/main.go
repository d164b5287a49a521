// Command flashcore-backend-triton measures FlashCore bench's own
// FlashAttention forward kernel written in Triton, autotuned per shape; with
// no GPU it runs under Triton's CPU interpreter at small shapes (README.md).
//
// Where to start: backend.go configures the shared Python bridge
// (internal/bridge) with this plugin's worker module, triton_backend.py,
// and the kernel, triton_attention.py, both embedded in the binary.
package main

import "github.com/flashcore/bench/sdk"

func main() { sdk.Serve(New) }
