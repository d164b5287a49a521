// Package buildtest builds the repository's plugin binaries for tests that
// run them for real through go-plugin. Each package is built once per test
// process, into a directory shared by that process's tests.
package buildtest

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	dir   string
	built = map[string]string{}
)

// Plugin builds the main package at pkg (relative to the module root, e.g.
// PluginMain("cpu-reference") or "internal/testplugins/echo") as a plugin
// binary named flashcore-backend-<name> and returns its path. Binaries of one test
// process share a directory, so after building several plugins,
// filepath.Dir of any of them is a plugin path holding them all.
//
// When $FLASHCORE_BIN names a directory holding that plugin (make test sets
// it to bin/, built just before), that binary is used instead: it is built
// the way users build it, with the cuda tag where CUDA is installed. Else
// the plugin is built with the cuda tag exactly when this test binary was.
func Plugin(t testing.TB, name, pkg string) string {
	t.Helper()
	if dir := os.Getenv("FLASHCORE_BIN"); dir != "" {
		path := filepath.Join(dir, "flashcore-backend-"+name)
		if _, err := os.Stat(path); err == nil {
			return path
		}
	}
	return build(t, "flashcore-backend-"+name, pkg)
}

// PluginMain is the main package of the plugin in plugins/NAME, relative
// to the module root: its thin main, plugins/NAME/cmd/flashcore-backend-NAME.
func PluginMain(name string) string {
	return path.Join("plugins", name, "cmd", "flashcore-backend-"+name)
}

// Binary builds a command (e.g. "cmd/flashcore") into the same directory.
func Binary(t testing.TB, name, pkg string) string {
	t.Helper()
	return build(t, name, pkg)
}

func build(t testing.TB, file, pkg string) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if path, ok := built[file]; ok {
		return path
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "flashcore-test-bin-")
		if err != nil {
			t.Fatal(err)
		}
		dir = d
	}
	path := filepath.Join(dir, file)
	cmd := exec.Command("go", "build", "-tags", buildTags, "-o", path, "./"+pkg)
	cmd.Dir = moduleRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	built[file] = path
	return path
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Cleanup removes the binaries; call it from TestMain after m.Run.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
		dir, built = "", map[string]string{}
	}
}
