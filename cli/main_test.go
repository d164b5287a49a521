package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flashcore/bench/internal/buildtest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	buildtest.Cleanup()
	os.Exit(code)
}

// golden compares got with testdata/NAME.golden; on a mismatch it writes
// NAME.got beside it so the difference can be inspected.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		os.WriteFile(strings.TrimSuffix(path, ".golden")+".got", []byte(got), 0o644)
		t.Errorf("%s differs from %s (wrote .got):\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

func runMain(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out, errOut bytes.Buffer
	err := Main(context.Background(), args, &out, &errOut)
	if err != nil {
		errOut.WriteString("flashcore: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), ExitCode(err)
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"no-command", nil, ExitUsage},
		{"unknown-command", []string{"frobnicate"}, ExitUsage},
		{"typo-key", []string{"run", "--suite", "testdata/typo.toml"}, ExitUsage},
		{"missing-suite", []string{"run", "--suite", "testdata/nope.toml"}, ExitUsage},
		{"bad-format", []string{"run", "--format", "xml"}, ExitUsage},
		{"describe-without-backend", []string{"describe"}, ExitUsage},
		{"report-missing-file", []string{"report", "testdata/nope.json"}, ExitUsage},
		{"plot-without-file", []string{"plot"}, ExitUsage},
		{"shard-out-of-range", []string{"run", "--suite", "testdata/small.toml", "--shard", "2/2"}, ExitUsage},
		{"merge-one-file", []string{"merge", "out.json"}, ExitUsage},
		{"slurm-without-shards", []string{"slurm", "--suite", "testdata/small.toml"}, ExitUsage},
		{"k8s-without-image", []string{"k8s", "--suite", "/suites/small.toml", "--shards", "2"}, ExitUsage},
		{"bad-budget", []string{"run", "--budget", "fast"}, ExitUsage},
		{"bad-budget-key", []string{"run", "--budget", "case=2s"}, ExitUsage},
		{"explain-time-csv", []string{"run", "--explain-time", "--format", "csv"}, ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runMain(t, nil, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tt.code, stderr)
			}
			golden(t, "usage-"+tt.name, stdout+stderr)
		})
	}
}

// TestListNamesEveryPluginAndWhyItIsUnavailable runs real plugin processes.
func TestListNamesEveryPluginAndWhyItIsUnavailable(t *testing.T) {
	dir := pluginDir(t, map[string]string{
		"test-echo":   "internal/testplugins/echo",
		"test-stdout": "internal/testplugins/stdout",
		"test-crash":  "internal/testplugins/crash",
	})
	stdout, stderr, code := runMain(t, map[string]string{"FLASHCORE_PLUGIN_PATH": dir}, "list")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden(t, "list", stdout)
}

// pluginDir builds the plugins and links them into a directory of their
// own, so a test sees exactly those plugins.
func pluginDir(t *testing.T, plugins map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, pkg := range plugins {
		path := buildtest.Plugin(t, name, pkg)
		if err := os.Symlink(path, filepath.Join(dir, filepath.Base(path))); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRunAndReportRoundTrip(t *testing.T) {
	dir := pluginDir(t, map[string]string{"cpu-reference": "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference"})
	out := filepath.Join(t.TempDir(), "r.json")
	_, stderr, code := runMain(t, map[string]string{"FLASHCORE_PLUGIN_PATH": dir},
		"run", "--suite", "testdata/small.toml", "--out", out, "--format", "csv")
	if code != ExitOK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	stdout, stderr, code := runMain(t, nil, "report", out, "--format", "markdown")
	if code != ExitOK || !strings.Contains(stdout, "| cpu-reference") || !strings.Contains(stdout, "PASS") {
		t.Fatalf("report: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestExitCodes runs real plugins, honest and lying, and checks the exit
// code each run ends with, as the README's table lists them.
func TestExitCodes(t *testing.T) {
	liar := buildtest.Plugin(t, "test-liar", "internal/testplugins/liar")
	cuda := buildtest.Plugin(t, "cuda-scalar", "plugins/cuda-scalar/cmd/flashcore-backend-cuda-scalar")
	dir := t.TempDir()
	for _, lie := range []string{"honest", "rows-only", "fast-clock", "no-handshake"} {
		if err := os.Symlink(liar, filepath.Join(dir, "flashcore-backend-test-liar-"+lie)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(cuda, filepath.Join(dir, "flashcore-backend-cuda-scalar")); err != nil {
		t.Fatal(err)
	}
	suitePath := filepath.Join(t.TempDir(), "exit.toml")
	suiteText := `name = "exit"
[measurement]
min_samples = 3
time_cap = "50ms"
call_samples = 2
start_timeout = "2s"
[[cases]]
batch = 1
heads = 1
seq_q = 32
head_dim = 32
`
	if err := os.WriteFile(suitePath, []byte(suiteText), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		backends string
		code     int
		message  string
	}{
		{"test-liar-honest", ExitOK, ""},
		{"test-liar-honest,test-liar-rows-only", ExitFindings, "1 row(s) FAILed"},
		{"test-liar-honest,test-liar-fast-clock,test-liar-rows-only", ExitFailures, "1 row(s) ended in an ERROR, 1 FAILed"},
		{"test-liar-honest,test-liar-no-handshake", ExitFailures, "test-liar-no-handshake ("},
		{"test-liar-honest,cuda-scalar", ExitUnavailable, "asked-for backend(s) unavailable: cuda-scalar ("},
	}
	for _, tt := range tests {
		t.Run(tt.backends, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.json")
			_, stderr, code := runMain(t, map[string]string{"FLASHCORE_PLUGIN_PATH": dir},
				"run", "--suite", suitePath, "--backends", tt.backends, "--out", out)
			if code != tt.code || !strings.Contains(stderr, tt.message) {
				t.Errorf("exit %d, want %d with %q\nstderr:\n%s", code, tt.code, tt.message, stderr)
			}
		})
	}
	t.Run("unavailable-not-asked-for", func(t *testing.T) {
		only := t.TempDir()
		for _, name := range []string{"test-liar-honest", "cuda-scalar"} {
			target, _ := os.Readlink(filepath.Join(dir, "flashcore-backend-"+name))
			os.Symlink(target, filepath.Join(only, "flashcore-backend-"+name))
		}
		_, stderr, code := runMain(t, map[string]string{"FLASHCORE_PLUGIN_PATH": only},
			"run", "--suite", suitePath, "--out", filepath.Join(t.TempDir(), "r.json"))
		if code != ExitOK {
			t.Errorf("exit %d, want 0: a found backend without a device is not an error unless asked for\n%s", code, stderr)
		}
	})
}

// TestHelpIsNotAnError: asking a command for its flags prints them and
// exits 0.
func TestHelpIsNotAnError(t *testing.T) {
	for _, args := range [][]string{{"run", "--help"}, {"list", "-h"}, {"report", "--help"}, {"compare", "-help"}, {"describe", "--help"}} {
		_, stderr, code := runMain(t, nil, args...)
		if code != ExitOK || !strings.Contains(stderr, "Usage of "+args[0]) {
			t.Errorf("%v: exit %d, want 0 with the flags listed\n%s", args, code, stderr)
		}
	}
}

// TestUnknownBackends: a backend that no plugin is, named in a suite or
// with --backends, is a usage error that says where it was named and which
// backends there are; a suite's is reported even when --backends chooses
// others. No plugin is started, so the plugins here are empty files.
func TestUnknownBackends(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"cpu-reference", "triton"} {
		if err := os.WriteFile(filepath.Join(dir, "flashcore-backend-"+name), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		args []string
	}{
		{"in-suite", []string{"run", "--suite", "testdata/unknown-backend.toml"}},
		{"in-suite-with-backends-flag", []string{"run", "--suite", "testdata/unknown-backend.toml", "--backends", "cpu-reference"}},
		{"in-backends-flag", []string{"run", "--backends", "cpu-reference,tritn"}},
		{"in-backends-flag-verify-timing", []string{"verify-timing", "--backends", "sdpa"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.json")
			stdout, stderr, code := runMain(t, map[string]string{"FLASHCORE_PLUGIN_PATH": dir}, append(tt.args, "--out", out)...)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d\n%s", code, ExitUsage, stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("a results file was written for a run that never started")
			}
			golden(t, "unknown-backend-"+tt.name, stdout+stderr)
		})
	}
}
