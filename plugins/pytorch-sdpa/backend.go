package pytorchsdpa

import (
	"embed"

	"github.com/flashcore/bench/internal/bridge"
	"github.com/flashcore/bench/sdk"
)

// scripts is this plugin's side of the Python worker.
//
//go:embed sdpa_backend.py
var scripts embed.FS

// New is the plugin's backend: the shared Python bridge running this
// plugin's worker module. It starts nothing until the first call.
func New() sdk.Backend {
	return bridge.New(bridge.Config{Name: "pytorch-sdpa", Module: "sdpa_backend", Scripts: scripts})
}
