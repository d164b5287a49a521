// Command flashcore-backend-python-file serves a backend written as one
// Python file: the host starts it once per such backend, with
// --name NAME --file FILE (README.md).
//
// Where to start: backend.go reads those arguments and configures the
// shared Python bridge (internal/bridge) with its pyfile_backend module,
// which loads the file.
package main

import "github.com/flashcore/bench/sdk"

func main() { sdk.Serve(New) }
