// Package triton measures FlashCore bench's own FlashAttention kernels
// written in Triton, autotuned per shape: the forward, and a
// FlashAttention-2-style backward for attention's bwd and fwd+bwd modes;
// a split-KV paged decode kernel for the op decode; and a packed
// variable-length prefill kernel for the op varlen. With no GPU they run
// under Triton's CPU interpreter at small shapes (README.md).
//
// Where to start: backend.go configures the shared Python bridge
// (internal/bridge) with this plugin's worker module, triton_backend.py,
// and the kernels, triton_attention.py (forward),
// triton_attention_bwd.py (backward), triton_decode.py (decode) and
// triton_varlen.py (varlen), all embedded in the binary.
//
// New is the backend the plugin serves: on its own from
// cmd/flashcore-backend-triton (go build ./plugins/triton/...), or from a
// multi-call binary (cmd/flashcore-plugins).
package triton
