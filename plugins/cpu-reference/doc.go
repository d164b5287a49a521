// Package cpureference is the pure-Go attention backend of FlashCore bench,
// and the worked example for writing a new backend (docs/adding-a-
// backend.md).
//
// Where to start: backend.go implements the five methods of sdk.Backend;
// attention.go is the tiled online-softmax forward pass they time; dtype.go
// converts between the input files' element types and float32; cpu.go names
// the processor and empties its caches for the L2-cold mode.
//
// New is the backend the plugin serves: on its own from
// cmd/flashcore-backend-cpu-reference (go build
// ./plugins/cpu-reference/...), or from a multi-call binary
// (cmd/flashcore-plugins).
package cpureference
