// Package triton measures FlashCore bench's own FlashAttention forward
// kernel written in Triton, autotuned per shape; with no GPU it runs under
// Triton's CPU interpreter at small shapes (README.md).
//
// Where to start: backend.go configures the shared Python bridge
// (internal/bridge) with this plugin's worker module, triton_backend.py,
// and the kernel, triton_attention.py, both embedded in the binary.
//
// New is the backend the plugin serves: on its own from
// cmd/flashcore-backend-triton (go build ./plugins/triton/...), or from a
// multi-call binary (cmd/flashcore-plugins).
package triton
