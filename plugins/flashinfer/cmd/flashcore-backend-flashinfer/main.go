// Command flashcore-backend-flashinfer is the flashinfer plugin (package flashinfer) as a
// binary of its own. The multi-call binary of cmd/flashcore-plugins holds
// the same plugin.
package main

import (
	"github.com/flashcore/bench/plugins/flashinfer"
	"github.com/flashcore/bench/sdk"
)

func main() { sdk.Serve(flashinfer.New) }
