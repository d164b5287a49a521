package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlotWritesChartsAndReport: plot lists every file it wrote, the
// charts then report.html, and each is there and not empty.
func TestPlotWritesChartsAndReport(t *testing.T) {
	out := filepath.Join(t.TempDir(), "plots")
	stdout, stderr, code := runMain(t, nil, "plot", filepath.Join("..", "core", "report", "testdata", "run.json"), "--out", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden(t, "plot-files", strings.ReplaceAll(stdout, out, "OUT"))
	for _, path := range strings.Fields(stdout) {
		if info, err := os.Stat(path); err != nil || info.Size() == 0 {
			t.Errorf("%s: listed but not written (%v)", path, err)
		}
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != len(strings.Fields(stdout)) {
		t.Errorf("%d files in %s, %d listed: a temporary file was left", len(entries), out, len(strings.Fields(stdout)))
	}
}

// TestPlotNeverPanics runs plot on every results file the repository
// holds (the golden runs in testdata, the measured runs in docs/results)
// and on a run of one backend on one case, whose charts each have one
// point: each must exit 0, or with an error, never a panic.
func TestPlotNeverPanics(t *testing.T) {
	var files []string
	for _, pattern := range []string{"../core/*/testdata/*.json", "../docs/results/*.json", "../docs/results/*/*.json", "../docs/results/*/*/*.json"} {
		found, _ := filepath.Glob(pattern)
		files = append(files, found...)
	}
	one := filepath.Join(t.TempDir(), "one.json")
	dir := pluginDir(t, map[string]string{"cpu-reference": "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference"})
	if _, stderr, code := runMain(t, map[string]string{"FLASHCORE_PLUGIN_PATH": dir}, "run", "--suite", filepath.Join("testdata", "small.toml"), "--backends", "cpu-reference", "--out", one); code != ExitOK && code != ExitFindings {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	files = append(files, one)
	plotted := 0
	for _, file := range files {
		if data, err := os.ReadFile(file); err != nil || !strings.Contains(string(data), `"schema_version"`) {
			continue
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("plot %s panicked: %v", file, r)
				}
			}()
			_, stderr, code := runMain(t, nil, "plot", file, "--out", filepath.Join(t.TempDir(), "plots"))
			if code != ExitOK {
				t.Logf("plot %s: exit %d: %s", file, code, stderr)
			}
		})
		plotted++
	}
	if plotted < 3 {
		t.Fatalf("only %d results files found to plot", plotted)
	}
}
