// Package gputest makes a cuda-tagged test binary skip cleanly on a machine
// without a usable GPU. Import it for its side effect from _test.go files
// only:
//
//	import _ "github.com/flashcore/bench/cudakit/gpu/gputest"
//
// gorgonia.org/cu calls cuInit in its package init and, when that fails,
// prints to stdout and exits 1 before any test can skip. This package runs a
// C constructor first (constructors run before Go's package inits): if
// cuInit fails or finds no device, it prints a SKIP line naming the CUDA
// error and exits 0, so `go test -tags cuda` passes with every test skipped.
// Without the cuda tag the package is empty.
package gputest
