package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/internal/cudafile"
)

// cudaFilePrefix marks a backend named on the command line as a CUDA-file
// spec: --backends cu:kernels/splitkv.toml (its name is the file's stem).
const cudaFilePrefix = "cu:"

// cudaFiles lists the CUDA-file backends: those given as cu:SPEC in names
// first, then the suite's. Every spec is read and validated here, so a
// mistake in one is a usage error naming its file, line and key, not an
// unavailable backend later.
func cudaFiles(s *suite.Suite, names []string) ([]host.CUDAFile, []string, error) {
	var files []host.CUDAFile
	resolved := slices.Clone(names)
	for i, name := range names {
		spec, ok := strings.CutPrefix(name, cudaFilePrefix)
		if !ok {
			continue
		}
		if _, err := cudafile.Load(spec); err != nil {
			return nil, nil, fmt.Errorf("backend %s: %w", name, err)
		}
		resolved[i] = host.CUDAFileName(spec)
		files = append(files, host.CUDAFile{Name: resolved[i], File: spec})
	}
	if s != nil {
		for _, b := range s.Backends {
			if b.CUDA != "" {
				files = append(files, host.CUDAFile{Name: b.Name, File: b.CUDA})
			}
		}
	}
	return files, resolved, nil
}

// checkCUDASpecs validates the spec of every CUDA-file backend the suite
// names: part of reading the suite.
func checkCUDASpecs(s *suite.Suite) error {
	var errs []error
	for _, b := range s.Backends {
		if b.CUDA == "" {
			continue
		}
		if _, err := cudafile.Load(b.CUDA); err != nil {
			errs = append(errs, fmt.Errorf("backend %s: %w", b.Name, err))
		}
	}
	return errors.Join(errs...)
}
