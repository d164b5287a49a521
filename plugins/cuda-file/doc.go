// Package cudafile serves a CUDA backend written as one .cu file (or a
// prebuilt cubin, fatbin or PTX) and its spec: the host starts it once per
// such backend, with --name NAME --spec SPEC.toml (README.md, docs/cuda.md).
//
// Where to start: backend.go reads those arguments and the spec
// (internal/cudafile) and configures the shared CUDA backend
// (cudakit) with the spec's plan and compiler.
//
// New is the backend the plugin serves: on its own from
// cmd/flashcore-backend-cuda-file (go build ./plugins/cuda-file/...), or
// from a multi-call binary (cmd/flashcore-plugins-cuda).
package cudafile
