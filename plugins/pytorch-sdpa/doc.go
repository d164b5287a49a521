// Package pytorchsdpa measures PyTorch's scaled_dot_product_attention: its
// own dispatch and each SDPBackend pinned (README.md).
//
// Where to start: backend.go configures the shared Python bridge
// (internal/bridge) with this plugin's worker module, sdpa_backend.py,
// which is embedded in the binary.
//
// New is the backend the plugin serves: on its own from
// cmd/flashcore-backend-pytorch-sdpa (go build ./plugins/pytorch-sdpa/...),
// or from a multi-call binary (cmd/flashcore-plugins).
package pytorchsdpa
