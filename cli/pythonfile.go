package cli

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/suite"
)

// pythonFilePrefix marks a backend named on the command line as a Python
// file: --backends py:kernels/my_fa.py (its name is the file's stem, my_fa).
const pythonFilePrefix = "py:"

// findPlugins is every backend a command can use: the plugin binaries found
// in the suite's and the default places, and the backends written as one
// Python file or one CUDA file, which the suite names ([[backends]] python
// = FILE, cuda = SPEC) or names gives as py:FILE or cu:SPEC. It returns
// names with each py:FILE and cu:SPEC replaced by that backend's name.
func findPlugins(s *suite.Suite, names []string) ([]host.Plugin, []string, error) {
	found, err := host.Discover(pluginPlaces(s))
	if err != nil {
		return nil, nil, err
	}
	files, names, err := pythonFiles(s, names)
	if err != nil {
		return nil, nil, err
	}
	found, err = host.WithPythonFiles(found, files)
	if err != nil {
		return nil, nil, err
	}
	cudaSpecs, names, err := cudaFiles(s, names)
	if err != nil {
		return nil, nil, err
	}
	found, err = host.WithCUDAFiles(found, cudaSpecs)
	return found, names, err
}

// pythonFiles lists the Python-file backends: those given as py:FILE in
// names first (the command line wins over the suite), then the suite's.
func pythonFiles(s *suite.Suite, names []string) ([]host.PythonFile, []string, error) {
	var files []host.PythonFile
	resolved := slices.Clone(names)
	for i, name := range names {
		file, ok := strings.CutPrefix(name, pythonFilePrefix)
		if !ok {
			continue
		}
		if err := checkPythonFile(file); err != nil {
			return nil, nil, fmt.Errorf("backend %s: %w", name, err)
		}
		resolved[i] = host.PythonFileName(file)
		files = append(files, host.PythonFile{Name: resolved[i], File: file})
	}
	if s != nil {
		for _, b := range s.Backends {
			if b.Python != "" {
				files = append(files, host.PythonFile{Name: b.Name, File: b.Python})
			}
		}
	}
	return files, resolved, nil
}

// checkPythonFile is the command line's check of a Python file; a suite's
// files are checked when the suite is read.
func checkPythonFile(file string) error {
	if !strings.HasSuffix(file, ".py") {
		return fmt.Errorf("%q is not a .py file", file)
	}
	info, err := os.Stat(file)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s: no such file", file)
	case err != nil:
		return err
	case info.IsDir():
		return fmt.Errorf("%s is a folder, not a .py file", file)
	}
	return nil
}
