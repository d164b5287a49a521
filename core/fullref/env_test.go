package fullref

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flashcore/bench/internal/environ"
)

func TestPythonEnvWritesNoBytecodeBesideTheSources(t *testing.T) {
	tests := []struct {
		name              string
		env               []string
		cache             string
		dontWrite, prefix string
	}{
		{"forbidden beside the sources: kept in the cache", []string{"PYTHONDONTWRITEBYTECODE=1"}, "/c", "", "/c/pycache"},
		{"allowed: Python reads what is installed and writes nothing", nil, "/c", "1", ""},
		{"the user's prefix is theirs", []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONPYCACHEPREFIX=/mine"}, "/c", "1", "/mine"},
		{"no cache directory", []string{"PYTHONDONTWRITEBYTECODE=1"}, "", "1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := pythonEnv(tt.env, tt.cache)
			if got := environ.Value(env, "PYTHONDONTWRITEBYTECODE"); got != tt.dontWrite {
				t.Errorf("PYTHONDONTWRITEBYTECODE = %q, want %q", got, tt.dontWrite)
			}
			if got := environ.Value(env, "PYTHONPYCACHEPREFIX"); got != tt.prefix {
				t.Errorf("PYTHONPYCACHEPREFIX = %q, want %q", got, tt.prefix)
			}
		})
	}
}

// TestKeepsTorchsBytecodeInItsCache starts the real reference process
// where PYTHONDONTWRITEBYTECODE is set: torch's bytecode is then in the
// user's cache, so that the next run does not compile it again.
func TestKeepsTorchsBytecodeInItsCache(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("PYTHONDONTWRITEBYTECODE", "1")
	t.Setenv("PYTHONPYCACHEPREFIX", "") // restored after the test
	_ = os.Unsetenv("PYTHONPYCACHEPREFIX")
	w := startCPU(t)
	w.Close()
	torch := 0
	_ = filepath.WalkDir(filepath.Join(cache, "flashcore", "fullref", "pycache"), func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".pyc") && strings.Contains(path, string(filepath.Separator)+"torch"+string(filepath.Separator)) {
			torch++
		}
		return nil
	})
	if torch == 0 {
		t.Errorf("no bytecode of torch in the reference's cache %s", filepath.Join(cache, "flashcore", "fullref", "pycache"))
	}
}
