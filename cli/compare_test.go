package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// The results files of core/compare's tests: new.json has two
// regressions and a slower row against old.json; newer.json has neither.
var (
	compareOld   = filepath.Join("..", "core", "compare", "testdata", "old.json")
	compareNew   = filepath.Join("..", "core", "compare", "testdata", "new.json")
	compareNewer = filepath.Join("..", "core", "compare", "testdata", "newer.json")
)

func TestCompareExitCode(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		code       int
		wantStdout string
	}{
		{"findings alone do not fail", []string{compareOld, compareNew}, ExitOK, "REGRESSION (pass → FAIL)"},
		{"regressions fail when asked", []string{compareOld, compareNew, "--fail-on-regression"}, ExitFindings, "REGRESSION"},
		{"flag before the files", []string{"--fail-on-regression", compareOld, compareNew}, ExitFindings, "REGRESSION"},
		{"faster, no regression", []string{compareOld, compareNewer, "--fail-on-regression"}, ExitOK, "faster"},
		{"same run twice", []string{compareOld, compareOld, "--fail-on-regression"}, ExitOK, "same"},
		{"threshold", []string{compareOld, compareNewer, "--threshold", "0.2", "--fail-on-regression"}, ExitOK, "beyond ±20%"},
		{"ablation", []string{compareOld, compareNew, compareNewer, "--labels", "baseline, +cp.async, +vectorised I/O",
			"--fail-on-regression"}, ExitFindings, "+vectorised I/O"},
		{"markdown", []string{compareOld, compareNew, "--format", "markdown"}, ExitOK, "## FlashCore bench comparison"},
		{"csv", []string{compareOld, compareNew, "--format", "csv"}, ExitOK, "case_id,row,backend,"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runMain(t, nil, append([]string{"compare"}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tt.code, stderr)
			}
			if !strings.Contains(stdout, tt.wantStdout) {
				t.Errorf("stdout does not contain %q:\n%s", tt.wantStdout, stdout)
			}
		})
	}
}

// TestCompareFailureMessage keeps what --fail-on-regression says on stderr.
func TestCompareFailureMessage(t *testing.T) {
	_, stderr, _ := runMain(t, nil, "compare", compareOld, compareNew, "--fail-on-regression")
	golden(t, "compare-fail-on-regression", stderr)
}

func TestCompareUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"one-file", []string{compareOld}},
		{"bad-format", []string{compareOld, compareNew, "--format", "json"}},
		{"negative-threshold", []string{compareOld, compareNew, "--threshold", "-0.1"}},
		{"cpu-threshold-in-percent", []string{compareOld, compareNew, "--cpu-threshold", "35"}},
		{"labels-count", []string{compareOld, compareNew, "--labels", "only-one"}},
		{"missing-file", []string{compareOld, "testdata/nope.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runMain(t, nil, append([]string{"compare"}, tt.args...)...)
			if code != ExitUsage {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, ExitUsage, stderr)
			}
			golden(t, "compare-usage-"+tt.name, stdout+stderr)
		})
	}
}
