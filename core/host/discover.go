package host

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// BinaryPrefix starts the file name of every plugin binary.
const BinaryPrefix = "flashcore-backend-"

// Plugin is a backend binary found on disk.
type Plugin struct {
	Name string // the backend name: the file name without BinaryPrefix
	Path string // absolute path of the binary
	// PythonFile is set for a backend written as one Python file: Path is
	// then the python-file runner, started on this file (WithPythonFiles).
	PythonFile string
	// CUDAFile is set for a backend written as one .cu file: Path is then
	// the cuda-file runner, started on this spec (WithCUDAFiles).
	CUDAFile string
}

// args are the plugin's command-line arguments.
func (p Plugin) args() []string {
	switch {
	case p.PythonFile != "":
		return PythonFileArgs(p.Name, p.PythonFile)
	case p.CUDAFile != "":
		return CUDAFileArgs(p.Name, p.CUDAFile)
	}
	return nil
}

// Discover returns the plugins found in places, in order: each place is a
// directory (searched for BinaryPrefix* executables) or a file (taken as a
// plugin binary). The first plugin found for a name wins, so earlier places
// shadow later ones. Places that do not exist are skipped: the default
// places need not all exist.
func Discover(places []string) ([]Plugin, error) {
	seen := map[string]bool{}
	var found []Plugin
	for _, place := range places {
		plugins, err := pluginsIn(place)
		if err != nil {
			return nil, err
		}
		for _, p := range plugins {
			if !seen[p.Name] {
				seen[p.Name] = true
				found = append(found, p)
			}
		}
	}
	return found, nil
}

func pluginsIn(place string) ([]Plugin, error) {
	info, err := os.Stat(place)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("plugin path %s: %w", place, err)
	}
	abs, err := filepath.Abs(place)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []Plugin{{Name: nameOf(abs), Path: abs}}, nil
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("plugin path %s: %w", place, err)
	}
	var plugins []Plugin
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), BinaryPrefix) {
			continue
		}
		// Stat follows links: a plugin of a multi-call binary is a link
		// to it (internal/multicall), and a dangling link is no plugin.
		if fi, err := os.Stat(filepath.Join(abs, e.Name())); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			continue
		}
		plugins = append(plugins, Plugin{Name: nameOf(e.Name()), Path: filepath.Join(abs, e.Name())})
	}
	sort.Slice(plugins, func(i, j int) bool { return plugins[i].Name < plugins[j].Name })
	return plugins, nil
}

func nameOf(path string) string {
	return strings.TrimPrefix(filepath.Base(path), BinaryPrefix)
}

// DefaultPlaces are where plugins are looked for when nothing else is said:
// the entries of $FLASHCORE_PLUGIN_PATH (a colon-separated list), then the
// directory of the running flashcore binary.
func DefaultPlaces() []string {
	var places []string
	if env := os.Getenv("FLASHCORE_PLUGIN_PATH"); env != "" {
		places = append(places, filepath.SplitList(env)...)
	}
	if exe, err := os.Executable(); err == nil {
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
		places = append(places, filepath.Dir(exe))
	}
	return places
}
