package host

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// PythonFileRunner is the plugin that runs a backend written as one Python
// file (plugins/python-file). It is no backend by itself: the host starts
// it once for every such backend, with the file and the backend's name on
// its command line.
const PythonFileRunner = "python-file"

// PythonFile is a backend written as one Python file: a .py file defining
// attention(q, k, v, *, causal, scale).
type PythonFile struct {
	Name string // the backend's name in tables
	File string // the .py file
}

// PythonFileArgs are the command-line arguments that make the runner serve
// file as the backend name.
func PythonFileArgs(name, file string) []string {
	return []string{"--name", name, "--file", file}
}

// WithPythonFiles turns the plugins Discover found into the backends a run
// can use: the python-file runner is taken out (it is no backend by itself)
// and each of files becomes a plugin that starts the runner on that file.
// Those come first and shadow a plugin binary of the same name, as the
// places a suite names come before the default ones.
func WithPythonFiles(found []Plugin, files []PythonFile) ([]Plugin, error) {
	named := make([]fileBackend, len(files))
	for i, f := range files {
		named[i] = fileBackend{name: f.Name, file: f.File}
	}
	return withFileBackends(found, PythonFileRunner, "a Python file", named,
		func(runner Plugin, name, abs string) Plugin {
			return Plugin{Name: name, Path: runner.Path, PythonFile: abs}
		})
}

// fileBackend is a backend written as one file, run by a runner plugin.
type fileBackend struct{ name, file string }

// withFileBackends takes the runner plugin out of found (it is no backend
// by itself) and puts first one plugin per file, made by plugin, which
// shadows a plugin binary of the same name.
func withFileBackends(found []Plugin, runnerName, kind string, files []fileBackend, plugin func(runner Plugin, name, abs string) Plugin) ([]Plugin, error) {
	i := slices.IndexFunc(found, func(p Plugin) bool { return p.Name == runnerName })
	var runner Plugin
	if i >= 0 {
		runner = found[i]
		found = slices.Delete(slices.Clone(found), i, i+1)
	}
	var out []Plugin
	for _, f := range files {
		if runner.Path == "" {
			return nil, fmt.Errorf("backend %s is %s (%s), which runs in the plugin %s%s; it was not found: run `make build`, or put it where plugins are looked for",
				f.name, kind, f.file, BinaryPrefix, runnerName)
		}
		abs, err := filepath.Abs(f.file)
		if err != nil {
			return nil, err
		}
		out = append(out, plugin(runner, f.name, abs))
	}
	for _, p := range found {
		if !slices.ContainsFunc(files, func(f fileBackend) bool { return f.name == p.Name }) {
			out = append(out, p)
		}
	}
	return out, nil
}

// PythonFileName is the backend name of a Python file given without one:
// its file name without ".py" (kernels/my_fa.py is my_fa).
func PythonFileName(file string) string {
	return strings.TrimSuffix(filepath.Base(file), ".py")
}
