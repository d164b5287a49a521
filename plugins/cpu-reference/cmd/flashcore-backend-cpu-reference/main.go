// Command flashcore-backend-cpu-reference is the cpu-reference plugin (package cpureference) as a
// binary of its own. The multi-call binaries of cmd/flashcore-plugins and
// cmd/flashcore-plugins-cuda hold the same plugin.
package main

import (
	cpureference "github.com/flashcore/bench/plugins/cpu-reference"
	"github.com/flashcore/bench/sdk"
)

func main() { sdk.Serve(cpureference.New) }
