package bridge

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestBytecodeCacheIsThePluginsCache(t *testing.T) {
	env := []string{"PYTHONDONTWRITEBYTECODE=1", "FLASHCORE_CACHE_DIR=/c"}
	want := []string{"PYTHONDONTWRITEBYTECODE=", "PYTHONPYCACHEPREFIX=/c/pycache"}
	if got := bytecodeCache(env); !slices.Equal(got, want) {
		t.Errorf("bytecodeCache = %q, want %q", got, want)
	}
	if got := bytecodeCache([]string{"PYTHONDONTWRITEBYTECODE=1"}); got != nil {
		t.Errorf("without a cache of the plugin's: bytecodeCache = %q, want none", got)
	}
}

// TestWorkerKeepsItsBytecodeInThePluginsCache starts a real worker under
// PYTHONDONTWRITEBYTECODE: the bytecode of what it imported is in the
// plugin's cache, and nothing is written beside the worker's scripts.
func TestWorkerKeepsItsBytecodeInThePluginsCache(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("PYTHONDONTWRITEBYTECODE", "1")
	t.Setenv("PYTHONPYCACHEPREFIX", "") // restored after the test
	_ = os.Unsetenv("PYTHONPYCACHEPREFIX")
	t.Setenv("FLASHCORE_CACHE_DIR", cache)
	dir, err := writeScripts("probe", os.DirFS("testdata"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	var output bytes.Buffer
	w, err := startWorker(Interpreter(), dir, "probe_backend", nil, &output)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := w.readHello(ctx)
	w.stop()
	switch {
	case err != nil:
		t.Fatalf("hello: %v\n%s", err, output.String())
	case strings.Contains(h.Unavailable, "has no torch"):
		t.Skipf("the probe worker needs torch: %s", h.Unavailable)
	case h.Unavailable != "":
		t.Fatalf("hello: unavailable: %s", h.Unavailable)
	}
	var cached []string
	_ = filepath.WalkDir(filepath.Join(cache, "pycache"), func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".pyc") {
			cached = append(cached, filepath.Base(path))
		}
		return nil
	})
	if !slices.ContainsFunc(cached, func(name string) bool { return strings.HasPrefix(name, "flashcore_worker.") }) {
		t.Errorf("the plugin's cache holds %d .pyc files, none of flashcore_worker: %.5q", len(cached), cached)
	}
	if beside, _ := filepath.Glob(filepath.Join(dir, "__pycache__")); len(beside) != 0 {
		t.Errorf("bytecode was written beside the scripts: %v", beside)
	}
}
