// Command flashcore-backend-cpu-reference is the pure-Go attention backend of
// FlashCore bench, and the worked example for writing a new backend
// (docs/adding-a-backend.md).
//
// Where to start: backend.go implements the five methods of sdk.Backend;
// attention.go is the tiled online-softmax forward pass they time; dtype.go
// converts between the input files' element types and float32; cpu.go names
// the processor and empties its caches for the L2-cold mode.
package main

import "github.com/flashcore/bench/sdk"

func main() { sdk.Serve(New) }
