package pythonfile

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/flashcore/bench/internal/bridge"
	"github.com/flashcore/bench/sdk"
)

// runnerName is this plugin's own name: it is no backend by itself.
const runnerName = "python-file"

// The worker's module (internal/bridge/python/pyfile_backend.py) reads the
// file and the backend's name from these variables.
const (
	fileEnv = "FLASHCORE_PYTHON_FILE"
	nameEnv = "FLASHCORE_BACKEND_NAME"
)

// New is the backend named on the command line: the shared Python bridge
// running pyfile_backend on the file. It starts nothing until the first
// call.
func New() sdk.Backend { return newBackend(os.Args[1:]) }

func newBackend(args []string) sdk.Backend {
	name, file, err := parseArgs(args)
	if err != nil {
		return sdk.Unavailable(runnerName, err.Error())
	}
	return bridge.New(bridge.Config{
		Name:   name,
		Module: "pyfile_backend",
		Env:    []string{fileEnv + "=" + file, nameEnv + "=" + name},
	})
}

// parseArgs reads --name and --file, as the host passes them
// (core/host.PythonFileArgs). The name defaults to the file's stem; the
// file is made absolute.
func parseArgs(args []string) (name, file string, err error) {
	fs := flag.NewFlagSet(runnerName, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&name, "name", "", "the backend's name in tables")
	fs.StringVar(&file, "file", "", "the .py file that defines attention(q, k, v, *, causal, scale), rmsnorm(x, weight, *, eps) or both")
	if err := fs.Parse(args); err != nil {
		return "", "", fmt.Errorf("%s: %w", runnerName, err)
	}
	if file == "" {
		return "", "", errors.New("python-file runs the Python file a suite names ([[backends]] python = \"kernel.py\") or `--backends py:kernel.py`; it is no backend by itself")
	}
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(file), ".py")
	}
	file, err = filepath.Abs(file)
	return name, file, err
}
