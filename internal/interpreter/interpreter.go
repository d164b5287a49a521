// Package interpreter says which Python a bridge plugin's worker runs on.
// The bridges start their worker on it, and the host checks, before it
// gives a plugin a uid of its own, that the same interpreter is open to
// that user: one rule for both.
package interpreter

import (
	"os"
	"path/filepath"

	"github.com/flashcore/bench/internal/environ"
)

// Env names the variable that chooses the worker's interpreter.
const Env = "FLASHCORE_PYTHON"

// For is the Python a plugin whose binary is exe runs its worker on, in
// the environment env: $FLASHCORE_PYTHON, else the project's virtual
// environment when the plugin runs from a checkout (bin/ or dist/ next to
// .venv/, as `make setup` makes it), else python3 from PATH. A name
// without a slash is looked up on PATH when the worker starts.
func For(env []string, exe string) string {
	if python := environ.Value(env, Env); python != "" {
		return python
	}
	return beside(exe)
}

// beside is the checkout's .venv Python for a plugin binary at exe
// (<checkout>/bin/plugin), else python3.
func beside(exe string) string {
	if exe != "" {
		venv := filepath.Join(filepath.Dir(filepath.Dir(exe)), ".venv", "bin", "python")
		if info, err := os.Stat(venv); err == nil && !info.IsDir() {
			return venv
		}
	}
	return "python3"
}
