package bridge

import (
	"os"
	"path/filepath"
	"testing"
)

// TestInterpreterFindsTheCheckoutsVenv: a plugin in <checkout>/bin uses
// <checkout>/.venv/bin/python when there is one, and python3 otherwise.
func TestInterpreterFindsTheCheckoutsVenv(t *testing.T) {
	checkout := t.TempDir()
	plugin := filepath.Join(checkout, "bin", "flashcore-backend-pytorch-sdpa")
	if got := interpreterBeside(plugin); got != "python3" {
		t.Errorf("without a .venv: %q, want python3", got)
	}
	venv := filepath.Join(checkout, ".venv", "bin", "python")
	if err := os.MkdirAll(filepath.Dir(venv), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(venv, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := interpreterBeside(plugin); got != venv {
		t.Errorf("with a .venv: %q, want %q", got, venv)
	}
	if got := interpreterBeside(""); got != "python3" {
		t.Errorf("unknown executable: %q, want python3", got)
	}
}
