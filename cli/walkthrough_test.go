package cli

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/internal/bridge/bridgetest"
)

// walkthroughMarker precedes every code block of the Python-file route in
// docs/adding-a-backend.md that the walk-through test uses: a file to write
// (<!-- walkthrough: my-kernel/suite.toml -->) or commands to run
// (<!-- walkthrough: run -->). cudaWalkthroughMarker does the same for the
// CUDA-file route.
var (
	walkthroughMarker     = regexp.MustCompile(`^<!-- walkthrough: (\S+) -->$`)
	cudaWalkthroughMarker = regexp.MustCompile(`^<!-- walkthrough-cuda: (\S+) -->$`)
)

type walkthrough struct {
	files    map[string]string // path in the new folder -> content
	order    []string
	commands [][]string // each `bin/flashcore ...` line, without the program
}

// readWalkthrough collects the blocks of the guide that marker marks.
func readWalkthrough(t *testing.T, guide string, marker *regexp.Regexp) walkthrough {
	t.Helper()
	data, err := os.ReadFile(guide)
	if err != nil {
		t.Fatal(err)
	}
	w := walkthrough{files: map[string]string{}}
	target, inBlock := "", false
	var block strings.Builder
	scanner := bufio.NewScanner(strings.NewReader(string(data)))
	for scanner.Scan() {
		line := scanner.Text()
		switch {
		case !inBlock && marker.MatchString(line):
			target = marker.FindStringSubmatch(line)[1]
		case target != "" && !inBlock && strings.HasPrefix(line, "```"):
			inBlock = true
			block.Reset()
		case inBlock && strings.HasPrefix(line, "```"):
			w.add(target, block.String())
			target, inBlock = "", false
		case inBlock:
			block.WriteString(line + "\n")
		}
	}
	return w
}

func (w *walkthrough) add(target, block string) {
	if target != "run" {
		w.files[target] = block
		w.order = append(w.order, target)
		return
	}
	for _, line := range strings.Split(block, "\n") {
		if fields := strings.Fields(line); len(fields) > 1 && fields[0] == "bin/flashcore" {
			w.commands = append(w.commands, fields[1:])
		}
	}
}

// TestAddingABackendWalkthrough follows the Python-file route of
// docs/adding-a-backend.md as a newcomer would: it writes the guide's files
// into an empty folder and runs the guide's commands with the real host,
// the real python-file plugin and a real Python worker.
func TestAddingABackendWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and runs torch")
	}
	w := readWalkthrough(t, filepath.Join("..", "docs", "adding-a-backend.md"), walkthroughMarker)
	if len(w.order) < 2 || len(w.commands) < 2 {
		t.Fatalf("the guide's walk-through has %d files and %d commands; want the kernel, the suite, describe and run",
			len(w.order), len(w.commands))
	}
	bridgetest.RequireTorch(t)
	plugins := pluginDir(t, map[string]string{"python-file": "plugins/python-file/cmd/flashcore-backend-python-file", "pytorch-sdpa": "plugins/pytorch-sdpa/cmd/flashcore-backend-pytorch-sdpa"})
	t.Chdir(t.TempDir())
	for _, path := range w.order {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(w.files[path]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range w.commands {
		stdout, stderr, code := runMain(t, quietTorch(plugins), args...)
		if code != ExitOK {
			t.Fatalf("flashcore %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
		}
		checkWalkthroughStep(t, args[0], stdout)
	}
}

// quietTorch is the environment of the tests that run torch on the CPU: the
// plugins in dir, and torch on one thread. On a small shared machine torch's
// thread pool is what other processes preempt, and a row whose wall-clock
// samples swing 100-fold fails the runner's plausibility rules; one thread
// keeps the timing steady enough to test the plumbing.
func quietTorch(dir string) map[string]string {
	return map[string]string{"FLASHCORE_PLUGIN_PATH": dir, "OMP_NUM_THREADS": "1"}
}

// checkWalkthroughStep checks what the guide says each command shows.
func checkWalkthroughStep(t *testing.T, command, stdout string) {
	t.Helper()
	var want []string
	switch command {
	case "describe":
		want = []string{"backend:   my-attention", "available: yes", "variant my-attention", "file:      "}
	case "run":
		want = []string{"│ my-attention │", "│ sdpa         │", "PASS"}
	}
	for _, w := range want {
		if !strings.Contains(stdout, w) {
			t.Errorf("flashcore %s: output lacks %q:\n%s", command, w, stdout)
		}
	}
}

// TestRunPythonFileExample runs examples/python/torch_attention.py end to
// end on a small suite, named on the command line and by a suite.
func TestRunPythonFileExample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and runs torch")
	}
	bridgetest.RequireTorch(t)
	plugins := pluginDir(t, map[string]string{"python-file": "plugins/python-file/cmd/flashcore-backend-python-file", "cpu-reference": "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference"})
	env := quietTorch(plugins)
	tests := []struct {
		name, row string
		args      []string
	}{
		{"command line", "torch_attention", []string{"--suite", "testdata/small.toml", "--backends",
			"py:../examples/python/torch_attention.py,cpu-reference"}},
		{"suite", "my-fa", []string{"--suite", "testdata/pyfile.toml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.json")
			args := append([]string{"run", "--out", out, "--format", "markdown"}, tt.args...)
			stdout, stderr, code := runMain(t, env, args...)
			if code != ExitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if got := strings.Count(stdout, "| "+tt.row+" "); got != 3 {
				t.Errorf("%d rows of %s, want one per case and one in the summary (3):\n%s", got, tt.row, stdout)
			}
		})
	}
}

// TestRunAutotunedTritonFile runs examples/python/triton_autotuned_attention.py,
// a file with triton.autotune and a driver query at import, through the
// real host, plugin and worker. Without a GPU the worker puts Triton under
// its interpreter, where autotune launches the first config untimed: every
// row must pass, not fail for want of a driver.
func TestRunAutotunedTritonFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and runs Triton")
	}
	bridgetest.RequireTorch(t)
	plugins := pluginDir(t, map[string]string{"python-file": "plugins/python-file/cmd/flashcore-backend-python-file"})
	out := filepath.Join(t.TempDir(), "r.json")
	stdout, stderr, code := runMain(t, quietTorch(plugins), "run", "--suite", "testdata/triton-autotuned.toml",
		"--out", out, "--format", "markdown")
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if got := strings.Count(stdout, "| PASS"); got != 4 {
		t.Errorf("%d PASS rows, want one per case (4):\n%s", got, stdout)
	}
}

// TestTritonCompileErrorKeepsItsCause runs testdata/triton-compile-error,
// a Triton file whose tl.dot cannot work, through the real host and
// worker. The row is an ERROR whose reason names the error, not the
// traceback around it, and the plugin's whole stderr is kept in the file
// the row names (full_reason_file). Without a GPU the interpreter rejects
// the dot; on one, Triton's compiler does.
func TestTritonCompileErrorKeepsItsCause(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and runs Triton")
	}
	bridgetest.RequireTorch(t)
	plugins := pluginDir(t, map[string]string{"python-file": "plugins/python-file/cmd/flashcore-backend-python-file"})
	out := filepath.Join(t.TempDir(), "r.json")
	_, stderr, code := runMain(t, quietTorch(plugins), "run", "--suite", "testdata/triton-compile-error/suite.toml", "--out", out)
	if code != ExitFailures {
		t.Fatalf("exit %d, want %d (an ERROR row):\n%s", code, ExitFailures, stderr)
	}
	row := onlyRow(t, out)
	if !strings.Contains(row.Reason, "reduction dimensions") && !strings.Contains(row.Reason, "not compatible for matmul") ||
		strings.Contains(row.Reason, "Traceback") {
		t.Errorf("reason %q: want the dot's error, not a traceback", row.Reason)
	}
	full, err := os.ReadFile(row.Facts["full_reason_file"])
	if err != nil {
		t.Fatalf("full_reason_file %q: %v", row.Facts["full_reason_file"], err)
	}
	for _, want := range []string{row.Reason, "the plugin's stderr, whole", "Traceback (most recent call last)", "bad_dot.py"} {
		if !strings.Contains(string(full), want) {
			t.Errorf("%s lacks %q:\n%s", row.Facts["full_reason_file"], want, full)
		}
	}
}

// onlyRow is the one row of the results file at path.
func onlyRow(t *testing.T, path string) results.Result {
	t.Helper()
	run, err := results.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Results) != 1 {
		t.Fatalf("%d rows, want 1", len(run.Results))
	}
	return run.Results[0]
}

// The python-file plugin is no backend by itself: list leaves it out and
// shows the suite's Python files, describe finds them by name.
func TestListAndDescribePythonFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds plugins and runs torch")
	}
	bridgetest.RequireTorch(t)
	plugins := pluginDir(t, map[string]string{"python-file": "plugins/python-file/cmd/flashcore-backend-python-file"})
	env := map[string]string{"FLASHCORE_PLUGIN_PATH": plugins}
	stdout, stderr, code := runMain(t, env, "list", "--suite", "testdata/pyfile.toml")
	if code != ExitOK || !strings.Contains(stdout, "my-fa ") || strings.Contains(stdout, "python-file") {
		t.Errorf("list: exit %d, want my-fa and no python-file:\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = runMain(t, env, "describe", "py:../examples/python/torch_attention.py")
	if code != ExitOK || !strings.Contains(stdout, "variant torch_attention") || !strings.Contains(stdout, "available: yes") {
		t.Errorf("describe py:FILE: exit %d:\n%s%s", code, stdout, stderr)
	}
	_, stderr, code = runMain(t, env, "run", "--backends", "py:nope.py")
	if code != ExitUsage || !strings.Contains(stderr, "backend py:nope.py: nope.py: no such file") {
		t.Errorf("run py:nope.py: exit %d, want %d and the missing file named:\n%s", code, ExitUsage, stderr)
	}
}
