package interpreter

import (
	"os"
	"path/filepath"
	"testing"
)

// TestForFindsTheCheckoutsVenv: a plugin in <checkout>/bin uses
// <checkout>/.venv/bin/python when there is one, and python3 otherwise;
// FLASHCORE_PYTHON wins over both.
func TestForFindsTheCheckoutsVenv(t *testing.T) {
	checkout := t.TempDir()
	plugin := filepath.Join(checkout, "bin", "flashcore-backend-pytorch-sdpa")
	if got := For(nil, plugin); got != "python3" {
		t.Errorf("without a .venv: %q, want python3", got)
	}
	venv := filepath.Join(checkout, ".venv", "bin", "python")
	if err := os.MkdirAll(filepath.Dir(venv), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(venv, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := For(nil, plugin); got != venv {
		t.Errorf("with a .venv: %q, want %q", got, venv)
	}
	if got := For(nil, ""); got != "python3" {
		t.Errorf("unknown executable: %q, want python3", got)
	}
	if got := For([]string{Env + "=/opt/py/bin/python3"}, plugin); got != "/opt/py/bin/python3" {
		t.Errorf("with %s set: %q", Env, got)
	}
}
