// Command flashcore-plugins is the multi-call binary of this repository's
// plugins: one binary that is each of them, started under each plugin's
// file name (a link flashcore-backend-NAME to it) or as flashcore-plugins
// NAME. Each plugin still runs as a process of its own.
//
// `make build` and `make dist` build it twice with every folder under
// plugins/ (see internal/multicall): flashcore-plugins from the plugins
// that need no CUDA, and flashcore-plugins-cuda from those that do, which
// need libcuda to start. Built with plain `go build`, it holds no plugins.
package main

import "github.com/flashcore/bench/internal/multicall"

// plugins is filled in by the file the build's overlay adds
// (multicall.RegistryFile).
var plugins []multicall.Plugin

func main() { multicall.Main(plugins) }
