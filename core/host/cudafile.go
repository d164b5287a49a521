package host

import (
	"path/filepath"
	"strings"
)

// CUDAFileRunner is the plugin that runs a backend written as one .cu file
// and its spec (plugins/cuda-file). Like the python-file runner it is no
// backend by itself: the host starts it once for every such backend, with
// the spec and the backend's name on its command line.
const CUDAFileRunner = "cuda-file"

// CUDAFile is a backend written as one .cu file (or a prebuilt cubin): File
// is its spec, a .toml file (docs/cuda.md).
type CUDAFile struct {
	Name string // the backend's name in tables
	File string // the spec
}

// CUDAFileArgs are the command-line arguments that make the runner serve
// the spec as the backend name.
func CUDAFileArgs(name, spec string) []string {
	return []string{"--name", name, "--spec", spec}
}

// WithCUDAFiles takes the cuda-file runner out of found and makes each of
// files a plugin that starts it on that spec, first, as WithPythonFiles
// does for Python files.
func WithCUDAFiles(found []Plugin, files []CUDAFile) ([]Plugin, error) {
	named := make([]fileBackend, len(files))
	for i, f := range files {
		named[i] = fileBackend{name: f.Name, file: f.File}
	}
	return withFileBackends(found, CUDAFileRunner, "a CUDA file", named,
		func(runner Plugin, name, abs string) Plugin {
			return Plugin{Name: name, Path: runner.Path, CUDAFile: abs}
		})
}

// CUDAFileName is the backend name of a spec given without one: its file
// name without ".toml" (kernels/splitkv.toml is splitkv).
func CUDAFileName(spec string) string {
	return strings.TrimSuffix(filepath.Base(spec), ".toml")
}
