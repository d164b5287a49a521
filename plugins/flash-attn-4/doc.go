// Package flashattn4 measures FlashAttention-4 (the flash-attn-4 wheel,
// module flash_attn.cute), an optional third-party library installed with
// `make setup EXTRAS=fa4` (README.md): attention forward and backward,
// varlen, and decode over a paged KV cache.
//
// Where to start: backend.go configures the shared Python bridge
// (internal/bridge) with this plugin's worker module, fa4_backend.py,
// which is embedded in the binary. The module's adapter is tested on the
// CPU with a fake flash_attn.cute that records its calls
// (python/tests/test_fa4_adapter.py); the library itself runs on a GPU.
//
// New is the backend the plugin serves: on its own from
// cmd/flashcore-backend-flash-attn-4, or from a multi-call binary
// (cmd/flashcore-plugins).
package flashattn4
