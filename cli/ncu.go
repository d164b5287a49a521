package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/flashcore/bench/internal/bridge"
)

// checkOutDir refuses an output directory the worker wrapper could not
// carry: FLASHCORE_WORKER_WRAPPER is split on white space.
func checkOutDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(abs, " \t\n") {
		return "", fmt.Errorf("--out %q: the directory's path may not contain white space (ncu's report path travels in $%s)", abs, bridge.WorkerWrapperEnv)
	}
	return abs, nil
}
