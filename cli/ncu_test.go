package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestNcuCommandUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"verify-timing-bad-l2", []string{"verify-timing", "--l2", "warm"}},
		{"verify-timing-out-with-space", []string{"verify-timing", "--out", "my reports"}},
		{"verify-timing-bad-reference", []string{"verify-timing", "--reference", "nsys"}},
		{"profile-without-case", []string{"profile", "--backend", "cuda-v8"}},
		{"profile-unknown-case", []string{"profile", "--backend", "cuda-v8", "--case", "b9", "--suite", "testdata/small.toml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runMain(t, nil, tt.args...)
			if code != ExitUsage {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, ExitUsage, stderr)
			}
			golden(t, "usage-"+tt.name, stdout+withoutCwd(t, stderr))
		})
	}
}

// withoutCwd writes the working directory as "." so goldens hold no
// machine's path.
func withoutCwd(t *testing.T, s string) string {
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(s, dir, ".")
}

// TestWithoutNcu runs both commands, verify-timing with ncu as the only
// reference, with a PATH that has no ncu: one line that says what to
// install, exit code 4.
func TestWithoutNcu(t *testing.T) {
	dir := pluginDir(t, map[string]string{"cpu-reference": "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference"})
	env := map[string]string{"FLASHCORE_PLUGIN_PATH": dir, "PATH": t.TempDir()}
	tests := []struct {
		name string
		args []string
	}{
		{"verify-timing", []string{"verify-timing", "--reference", "ncu", "--suite", "testdata/small.toml", "--out", t.TempDir()}},
		{"profile", []string{"profile", "--backend", "cpu-reference", "--case", "b1-h2-s40-d64-fp16", "--suite", "testdata/small.toml", "--out", t.TempDir()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runMain(t, env, tt.args...)
			if code != ExitOther {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, ExitOther, stderr)
			}
			golden(t, "no-ncu", stdout+stderr)
		})
	}
}

// TestVerifyTimingAutoWithoutNcu: with the default reference, a missing
// ncu is a warning, not the end: rows that would need it have no figure,
// and rows that need no kernel reference (a CPU's) are SKIP as ever.
func TestVerifyTimingAutoWithoutNcu(t *testing.T) {
	dir := pluginDir(t, map[string]string{"cpu-reference": "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference"})
	env := map[string]string{"FLASHCORE_PLUGIN_PATH": dir, "PATH": t.TempDir()}
	stdout, stderr, code := runMain(t, env, "verify-timing", "--suite", "testdata/small.toml", "--out", t.TempDir())
	if code != ExitOK {
		t.Fatalf("exit %d, want %d\n%s", code, ExitOK, stderr)
	}
	if !strings.Contains(stderr, "rows that need ncu will have no figure") {
		t.Errorf("stderr does not warn of the missing ncu:\n%s", stderr)
	}
	if !strings.Contains(stdout, "\n2 SKIP\n") {
		t.Errorf("stdout:\n%s", stdout)
	}
}

// requireNcu skips a test that needs ncu's executable (not a GPU).
func requireNcu(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ncu"); err != nil {
		t.Skip("ncu is not installed")
	}
}

// TestVerifyTimingOnTheCPU: rows a CPU times have no kernel for ncu; they
// are SKIP, and with nothing to FAIL the command exits 0.
func TestVerifyTimingOnTheCPU(t *testing.T) {
	requireNcu(t)
	dir := pluginDir(t, map[string]string{"cpu-reference": "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference"})
	out := t.TempDir()
	stdout, stderr, code := runMain(t, map[string]string{"FLASHCORE_PLUGIN_PATH": dir},
		"verify-timing", "--suite", "testdata/small.toml", "--out", out)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{
		"│ cpu-reference │ cpu-reference │ b1-h2-s40-d64-fp16        │",
		"│ cpu-reference │ cpu-reference │ b1-h2-s40-d64-fp16-causal │",
		"SKIP: timed by wall-clock: no GPU kernel │\n",
		"\n2 SKIP\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "results.json")); err != nil {
		t.Errorf("the unprofiled run's results: %v", err)
	}
}

func TestProfileOfACPURowSaysWhy(t *testing.T) {
	requireNcu(t)
	dir := pluginDir(t, map[string]string{"cpu-reference": "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference"})
	stdout, stderr, code := runMain(t, map[string]string{"FLASHCORE_PLUGIN_PATH": dir},
		"profile", "--backend", "cpu-reference", "--case", "b1-h2-s40-d64-fp16", "--suite", "testdata/small.toml", "--out", t.TempDir())
	if code != ExitUsage {
		t.Errorf("exit %d, want %d\n%s", code, ExitUsage, stderr)
	}
	golden(t, "profile-cpu-row", stdout+stderr)
}
