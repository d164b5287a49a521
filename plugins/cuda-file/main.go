// Command flashcore-backend-cuda-file serves a CUDA backend written as one
// .cu file (or a prebuilt cubin, fatbin or PTX) and its spec: the host
// starts it once per such backend, with --name NAME --spec SPEC.toml
// (README.md, docs/cuda.md).
//
// Where to start: backend.go reads those arguments and the spec
// (internal/cudafile) and configures the shared CUDA backend
// (cudakit) with the spec's plan and compiler.
package main

import "github.com/flashcore/bench/sdk"

func main() { sdk.Serve(New) }
