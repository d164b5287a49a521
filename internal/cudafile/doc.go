// Package cudafile reads the spec of a CUDA backend written as one .cu file
// (or a prebuilt cubin, fatbin or PTX) and turns it into what the shared
// CUDA backend (cudakit) runs: a plan per case and a module
// image for the device there. It needs no GPU; the cuda-file plugin
// (plugins/cuda-file) runs it.
//
// Where to start: Parse (spec.go) validates a spec file, naming the file,
// line and key of every problem; Spec.Plan (plan.go) evaluates its formulas
// (formula.go) for one case; Compiler.Image (compile.go) compiles the
// source with nvcc for the device's architecture, cached by a hash of the
// source, the headers beside it, the options, the tunables, the target and
// the compiler. docs/cuda.md is the contract a kernel author reads.
package cudafile
