// Command flashcore-backend-flash-attn-4 is the flash-attn-4 plugin (package flashattn4) as a
// binary of its own. The multi-call binary of cmd/flashcore-plugins holds
// the same plugin.
package main

import (
	flashattn4 "github.com/flashcore/bench/plugins/flash-attn-4"
	"github.com/flashcore/bench/sdk"
)

func main() { sdk.Serve(flashattn4.New) }
