// Package flashinfer measures FlashInfer (the flashinfer-python wheel),
// the attention library serving stacks call, an optional third-party
// library installed with `make setup EXTRAS=flashinfer` (README.md):
// decode over a paged KV cache, varlen prefill, and dense attention
// forward.
//
// Where to start: backend.go configures the shared Python bridge
// (internal/bridge) with this plugin's worker module,
// flashinfer_backend.py, which is embedded in the binary. The module's
// adapter is tested on the CPU with a fake flashinfer that records its
// calls (python/tests/test_flashinfer_adapter.py); the library itself
// runs on a GPU.
//
// New is the backend the plugin serves: on its own from
// cmd/flashcore-backend-flashinfer, or from a multi-call binary
// (cmd/flashcore-plugins).
package flashinfer
