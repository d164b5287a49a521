package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestRooflineFromRecordedRun(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // an empty cache: the datasheet, said so
	for _, tt := range []struct{ name, peaks, format string }{
		{"roofline-seed-measured", "testdata/peaks-h100.json", "markdown"},
		{"roofline-seed-datasheet", "", "table"},
	} {
		args := []string{"roofline", seedRun, "--format", tt.format}
		if tt.peaks != "" {
			args = append(args, "--peaks", tt.peaks)
		}
		stdout, stderr, code := runMain(t, nil, args...)
		if code != ExitOK {
			t.Fatalf("%s: exit %d\n%s", tt.name, code, stderr)
		}
		golden(t, tt.name, stdout)
	}
}

// TestCalibrateThenRoofline measures this CPU with torch, caches the
// peaks, runs cpu-reference, and places its rows against the measured
// peaks: the whole loop on a machine without a GPU.
func TestCalibrateThenRoofline(t *testing.T) {
	if testing.Short() {
		t.Skip("calibrates with torch")
	}
	// Built before the cache directory moves: go build keeps its own cache
	// there.
	dir := pluginDir(t, map[string]string{"cpu-reference": "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference"})
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	_, stderr, code := runMain(t, nil, "calibrate", "--device", "cpu", "--copy-mib", "64", "--gemm-n", "512", "--repeats", "3")
	if code != ExitOK {
		if strings.Contains(stderr, "No module named 'torch'") {
			t.Skip("no torch on this Python: " + stderr)
		}
		t.Fatalf("calibrate: exit %d\n%s", code, stderr)
	}
	out := filepath.Join(t.TempDir(), "r.json")
	if _, stderr, code := runMain(t, map[string]string{"FLASHCORE_PLUGIN_PATH": dir}, "run", "--suite", "testdata/gate.toml", "--out", out); code != ExitOK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	stdout, stderr, code := runMain(t, nil, "roofline", out)
	if code != ExitOK || !strings.Contains(stdout, "measured peaks") || !strings.Contains(stdout, "float32 GEMM 512³") ||
		!strings.Contains(stdout, "│ b1-h2-s40-d64-fp16 │ cpu-reference │") {
		t.Errorf("roofline: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
