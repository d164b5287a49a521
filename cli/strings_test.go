package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/flashcore/bench/internal/buildtest"
	"github.com/flashcore/bench/internal/untrusted"
)

// TestPluginStringsAreData runs a plugin that says everything with
// terminal escapes, bidi overrides, a <script> tag and spreadsheet
// formulas, and fails with a 12 MiB reason, through run, report, list and
// describe in every format: no escape reaches any output, the Markdown has
// no tag, no CSV cell starts a formula, and the reason is capped in the
// table and the results file, its text kept whole in the file the row names.
func TestPluginStringsAreData(t *testing.T) {
	liar := buildtest.Plugin(t, "test-liar", "internal/testplugins/liar")
	dir := t.TempDir()
	if err := os.Symlink(liar, filepath.Join(dir, "flashcore-backend-test-liar-strings")); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FLASHCORE_PLUGIN_PATH": dir}
	out := filepath.Join(t.TempDir(), "r.json")
	var outputs []string
	stdout, stderr, code := runMain(t, env, "run", "--suite", filepath.Join("testdata", "small.toml"), "--format", "markdown", "--out", out)
	if code != ExitFindings {
		t.Fatalf("run: exit %d, want %d (the row FAILs): %s", code, ExitFindings, stderr)
	}
	outputs = append(outputs, stdout, stderr)
	markdown := stdout
	for _, format := range []string{"table", "csv", "json", "html"} {
		o, e, _ := runMain(t, env, "report", out, "--format", format)
		outputs = append(outputs, o, e)
		if format == "csv" {
			for _, line := range strings.Split(o, "\n") {
				for _, cell := range strings.Split(line, ",") {
					if c := strings.TrimPrefix(cell, `"`); c != "" && strings.ContainsRune("=+@", rune(c[0])) {
						t.Errorf("csv cell starts a formula: %.60q", cell)
					}
				}
			}
		}
	}
	for _, args := range [][]string{{"list"}, {"describe", "test-liar-strings"}} {
		o, e, _ := runMain(t, env, args...)
		outputs = append(outputs, o, e)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	outputs = append(outputs, string(data))
	for i, o := range outputs {
		if strings.ContainsAny(o, "\x1b\x07\u202e\u009b") {
			t.Errorf("output %d holds a control or bidi character: %.200q", i, o[strings.IndexAny(o, "\x1b\x07\u202e\u009b"):])
		}
	}
	if strings.Contains(markdown, "<script>") {
		t.Errorf("the Markdown holds a raw <script> tag")
	}
	var run struct {
		Results []struct {
			Reason string            `json:"reason"`
			Facts  map[string]string `json:"facts"`
		} `json:"results"`
	}
	if err := json.Unmarshal(data, &run); err != nil {
		t.Fatal(err)
	}
	if len(data) > 1<<20 {
		t.Errorf("results file is %d bytes: the reasons were not capped", len(data))
	}
	for _, r := range run.Results {
		if len(r.Reason) > untrusted.MaxReason+64 {
			t.Errorf("reason of %d bytes in the results file", len(r.Reason))
		}
		full, err := os.ReadFile(r.Facts["full_reason_file"])
		if err != nil || !strings.Contains(string(full), "[31mwrong[0m [31mwrong") || strings.Contains(string(full), "\x1b") {
			t.Errorf("full reason file %q: %v, %d bytes", r.Facts["full_reason_file"], err, len(full))
		}
	}
}

// TestLargeSweepAsksFirst: a suite of more than 10,000 cases is not run
// without --yes; the error gives its size and an estimate of its time.
func TestLargeSweepAsksFirst(t *testing.T) {
	var seqs []string
	for i := 1; i <= 110; i++ {
		seqs = append(seqs, strconv.Itoa(16*i))
	}
	path := filepath.Join(t.TempDir(), "big.toml")
	text := "name = \"big\"\n[[sweeps]]\nbatch = [1,2,3,4,5,6,7,8,9,10]\nheads = [1,2,3,4,5,6,7,8,9,10]\nseq_q = [" + strings.Join(seqs, ",") + "]\nhead_dim = [32]\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := pluginDir(t, map[string]string{"cpu-reference": "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference"})
	_, stderr, code := runMain(t, map[string]string{"FLASHCORE_PLUGIN_PATH": dir}, "run", "--suite", path, "--out", filepath.Join(t.TempDir(), "r.json"))
	if code != ExitUsage || !strings.Contains(stderr, "expands to 11000 cases, 11000 rows with 1 backends: about 5 hours") || !strings.Contains(stderr, "--yes") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
