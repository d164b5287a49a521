package flashattn4

import (
	"embed"

	"github.com/flashcore/bench/internal/bridge"
	"github.com/flashcore/bench/sdk"
)

// scripts is this plugin's side of the Python worker.
//
//go:embed fa4_backend.py
var scripts embed.FS

// New is the plugin's backend: the shared Python bridge running this
// plugin's worker module. It starts nothing until the first call; where
// the flash-attn-4 wheel is not installed, Describe answers unavailable
// with the command that installs it.
func New() sdk.Backend {
	return bridge.New(bridge.Config{Name: "flash-attn-4", Module: "fa4_backend", Scripts: scripts})
}
