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
	dir := pluginDir(t, map[string]string{"cpu-reference": "plugins/cpu-reference"})
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
