package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestGate runs real plugin processes through the gates: cpu-reference,
// deterministic and stable, passes; test-flaky, whose second output is one
// ULP off and whose third holds a NaN, fails determinism and stability
// (and correctness: it echoes Q), each named with backend, case, figure
// and limit.
func TestGate(t *testing.T) {
	dir := pluginDir(t, map[string]string{
		"cpu-reference": "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference",
		"test-flaky":    "internal/testplugins/flaky",
	})
	env := map[string]string{"FLASHCORE_PLUGIN_PATH": dir}
	tests := []struct {
		name     string
		args     []string
		code     int
		contains []string
	}{
		{"gate-pass", []string{"--backends", "cpu-reference"}, ExitOK, []string{"Every gate passed on 1 row(s)."}},
		{"gate-flaky", []string{"--backends", "test-flaky"}, ExitGate, []string{
			"test-flaky on b1-h2-s40-d64-fp16: determinism 2 of 3 runs differ from run 1",
			"test-flaky on b1-h2-s40-d64-fp16: stability 1 of 3 runs held NaN or Inf, limit 3 runs, no crash, no NaN or Inf",
		}},
		{"gate-flaky-markdown", []string{"--backends", "test-flaky", "--format", "markdown", "--runs", "2"}, ExitGate, []string{
			"| b1-h2-s40-d64-fp16 | test-flaky | FAIL    | FAIL",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "gate.json")
			args := append([]string{"gate", "--suite", "testdata/gate.toml", "--out", out}, tt.args...)
			stdout, stderr, code := runMain(t, env, args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			for _, want := range tt.contains {
				if !strings.Contains(stdout, want) {
					t.Errorf("output lacks %q:\n%s", want, stdout)
				}
			}
			golden(t, tt.name, stdout)
			// The saved run judges the same when given back.
			again, _, code := runMain(t, nil, append([]string{"gate", out, "--suite", "testdata/gate.toml"}, tt.args[2:]...)...)
			if code != tt.code || again != stdout {
				t.Errorf("judging the saved run: exit %d, output\n%s\nwant\n%s", code, again, stdout)
			}
		})
	}
}

func TestGateUsage(t *testing.T) {
	for name, args := range map[string][]string{
		"gate-bad-occupancy": {"gate", "--min-occupancy", "25"},
		"gate-bad-format":    {"gate", "--format", "csv"},
		"gate-typo-suite":    {"gate", "--suite", "testdata/gate-typo.toml"},
	} {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := runMain(t, nil, args...)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d\n%s", code, ExitUsage, stderr)
			}
			golden(t, "usage-"+name, stdout+stderr)
		})
	}
}
