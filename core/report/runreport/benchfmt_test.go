package runreport

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/internal/golden"
)

// benchstatVersion pins golang.org/x/perf, so that the test runs the same
// benchstat every time.
const benchstatVersion = "golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da"

func TestBenchfmtGolden(t *testing.T) {
	for goldenFile, path := range map[string]string{
		"benchfmt.golden":         runFixture,
		"benchfmt.samples.golden": samplesBase,
	} {
		t.Run(goldenFile, func(t *testing.T) {
			run, err := results.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := Render(&out, run, Options{Format: report.FormatBenchfmt}); err != nil {
				t.Fatal(err)
			}
			golden.Compare(t, filepath.Join("testdata", goldenFile), out.Bytes())
		})
	}
}

// TestBenchstatReadsTwoRuns exports two runs with raw samples (a real CPU
// run and its resampled copy) and runs the real benchstat, fetched
// through the Go module proxy, on them: it must read every line, and
// print a time and a throughput table with a row per benchmark and a
// geomean.
func TestBenchstatReadsTwoRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: benchstat is fetched and built")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to fetch benchstat with")
	}
	dir := t.TempDir()
	var files []string
	for i, p := range []string{samplesBase, samplesResampled} {
		run, err := results.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			// A later build on another day: still one table.
			run.Tool.Version, run.StartedAt = "0.2.0", run.StartedAt.Add(24*time.Hour)
		}
		var out bytes.Buffer
		if err := Render(&out, run, Options{Format: report.FormatBenchfmt}); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, strings.TrimSuffix(filepath.Base(p), ".json")+".txt")
		if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, file)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, append([]string{"run", benchstatVersion}, files...)...)
	cmd.Dir = dir // outside this module: go run pkg@version resolves it alone
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if unreachable(stderr.String()) {
			t.Skipf("the Go module proxy is unreachable, benchstat could not be fetched:\n%s", stderr.String())
		}
		t.Fatalf("benchstat: %v\n%s", err, stderr.String())
	}
	if complaint := withoutDownloads(stderr.String()); complaint != "" {
		t.Errorf("benchstat complained about the files:\n%s", complaint)
	}
	text := stdout.String()
	for _, want := range []string{"sec/op", "TFLOP/s", "GB/s", "case=b1-h2-s128-d32-fp32/row=cpu-reference", "geomean",
		"device: AMD EPYC (no GPU)", "tool: flashcore", "l2: hot", "samples-base.txt", "samples-resampled.txt", "vs base"} {
		if !strings.Contains(text, want) {
			t.Errorf("benchstat's output has no %q:\n%s", want, text)
		}
	}
	// One table per unit: the runs were set side by side, not apart.
	if n := len(regexp.MustCompile(`(?m)sec/op.*vs base`).FindAllString(text, -1)); n != 1 {
		t.Errorf("benchstat drew %d time tables, want 1 (the runs' keys differ):\n%s", n, text)
	}
	t.Logf("benchstat %s %s:\n%s", filepath.Base(files[0]), filepath.Base(files[1]), text)
}

// unreachable says whether go failed because it could not reach the
// module proxy (no network), rather than on the files.
func unreachable(stderr string) bool {
	for _, sign := range []string{"dial tcp", "no such host", "proxyconnect", "i/o timeout", "connection refused", "network is unreachable", "GOPROXY=off"} {
		if strings.Contains(stderr, sign) {
			return true
		}
	}
	return false
}

// withoutDownloads is benchstat's stderr less the go command's own
// "go: downloading ..." lines, which a first run prints while fetching it.
func withoutDownloads(stderr string) string {
	var kept []string
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if line != "" && !strings.HasPrefix(line, "go: downloading ") {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "\n")
}
