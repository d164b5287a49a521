// Command flashcore-plugins-cuda is the multi-call binary of this
// repository's plugins that need CUDA: one binary that is each of them,
// started under each plugin's file name (a link flashcore-backend-NAME to
// it) or as flashcore-plugins-cuda NAME. Each plugin still runs as a
// process of its own.
//
// Built with the cuda tag (make build, make dist: mk/cuda.mk gives cgo the
// pinned toolchain's headers), it needs libcuda to start; built without it,
// each plugin describes itself as unavailable, "built without CUDA". The
// plugins that need no CUDA are in cmd/flashcore-plugins; plugins/all_test.go
// checks that every plugin folder is in the right one of the two lists.
package main

import (
	"github.com/flashcore/bench/internal/multicall"
	cudafile "github.com/flashcore/bench/plugins/cuda-file"
	cudahopper "github.com/flashcore/bench/plugins/cuda-hopper"
	cudascalar "github.com/flashcore/bench/plugins/cuda-scalar"
	cudav8 "github.com/flashcore/bench/plugins/cuda-v8"
	cudawmma "github.com/flashcore/bench/plugins/cuda-wmma"
)

var plugins = []multicall.Plugin{
	{Name: "cuda-file", New: cudafile.New},
	{Name: "cuda-hopper", New: cudahopper.New},
	{Name: "cuda-scalar", New: cudascalar.New},
	{Name: "cuda-v8", New: cudav8.New},
	{Name: "cuda-wmma", New: cudawmma.New},
}

func main() { multicall.Main(plugins) }
