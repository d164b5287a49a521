// Command flashcore-backend-python-file is the python-file plugin (package pythonfile) as a
// binary of its own. The multi-call binaries of cmd/flashcore-plugins and
// cmd/flashcore-plugins-cuda hold the same plugin.
package main

import (
	pythonfile "github.com/flashcore/bench/plugins/python-file"
	"github.com/flashcore/bench/sdk"
)

func main() { sdk.Serve(pythonfile.New) }
