package flashinfer

import (
	"embed"

	"github.com/flashcore/bench/internal/bridge"
	"github.com/flashcore/bench/sdk"
)

// scripts is this plugin's side of the Python worker.
//
//go:embed flashinfer_backend.py
var scripts embed.FS

// New is the plugin's backend: the shared Python bridge running this
// plugin's worker module. It starts nothing until the first call; where
// the flashinfer-python wheel is not installed, Describe answers unavailable
// with the command that installs it.
func New() sdk.Backend {
	return bridge.New(bridge.Config{Name: "flashinfer", Module: "flashinfer_backend", Scripts: scripts})
}
