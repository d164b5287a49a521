package triton

import (
	"embed"

	"github.com/flashcore/bench/internal/bridge"
	"github.com/flashcore/bench/sdk"
)

// scripts is this plugin's side of the Python worker: the backend module
// and the kernels (forward, backward, decode and varlen).
//
//go:embed triton_backend.py triton_attention.py triton_attention_bwd.py triton_decode.py triton_varlen.py
var scripts embed.FS

// New is the plugin's backend: the shared Python bridge running this
// plugin's worker module. It starts nothing until the first call.
func New() sdk.Backend {
	return bridge.New(bridge.Config{Name: "triton", Module: "triton_backend", Scripts: scripts})
}
