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

func TestBytecodeCache(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    []string
	}{
		{"no bytecode written anywhere: kept in the plugin's cache",
			[]string{"PYTHONDONTWRITEBYTECODE=1", "FLASHCORE_CACHE_DIR=/c"},
			[]string{"PYTHONDONTWRITEBYTECODE=", "PYTHONPYCACHEPREFIX=/c/pycache"}},
		{"bytecode allowed: left to Python", []string{"FLASHCORE_CACHE_DIR=/c"}, nil},
		{"set empty is not set", []string{"PYTHONDONTWRITEBYTECODE=", "FLASHCORE_CACHE_DIR=/c"}, nil},
		{"the user's prefix wins",
			[]string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONPYCACHEPREFIX=/mine", "FLASHCORE_CACHE_DIR=/c"}, nil},
		{"no cache of the plugin's", []string{"PYTHONDONTWRITEBYTECODE=1"}, nil},
		{"the last of a duplicated key counts",
			[]string{"PYTHONDONTWRITEBYTECODE=", "PYTHONDONTWRITEBYTECODE=x", "FLASHCORE_CACHE_DIR=/a", "FLASHCORE_CACHE_DIR=/b"},
			[]string{"PYTHONDONTWRITEBYTECODE=", "PYTHONPYCACHEPREFIX=/b/pycache"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := bytecodeCache(tt.environ); !slices.Equal(got, tt.want) {
				t.Errorf("bytecodeCache = %q, want %q", got, tt.want)
			}
		})
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
