// Command flashcore-plugins is the multi-call binary of this repository's
// plugins that need no CUDA: one binary that is each of them, started
// under each plugin's file name (a link flashcore-backend-NAME to it) or as
// flashcore-plugins NAME. Each plugin still runs as a process of its own.
//
// Its twin, cmd/flashcore-plugins-cuda, holds the plugins that need CUDA
// (and libcuda to start). `make build` and `make dist` build both and make
// the links (internal/multicall). A plugin folder under plugins/ goes into
// exactly one of the two lists below; plugins/all_test.go checks that.
package main

import (
	"github.com/flashcore/bench/internal/multicall"
	cpureference "github.com/flashcore/bench/plugins/cpu-reference"
	flashattn4 "github.com/flashcore/bench/plugins/flash-attn-4"
	"github.com/flashcore/bench/plugins/flashinfer"
	pythonfile "github.com/flashcore/bench/plugins/python-file"
	pytorchsdpa "github.com/flashcore/bench/plugins/pytorch-sdpa"
	"github.com/flashcore/bench/plugins/triton"
)

var plugins = []multicall.Plugin{
	{Name: "cpu-reference", New: cpureference.New},
	{Name: "flash-attn-4", New: flashattn4.New},
	{Name: "flashinfer", New: flashinfer.New},
	{Name: "python-file", New: pythonfile.New},
	{Name: "pytorch-sdpa", New: pytorchsdpa.New},
	{Name: "triton", New: triton.New},
}

func main() { multicall.Main(plugins) }
