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
