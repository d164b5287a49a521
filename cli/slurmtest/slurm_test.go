package slurmtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/internal/buildtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	buildtest.Cleanup()
	os.Exit(code)
}

// jobLimit bounds the wait for the array and the merge: past it the test
// fails with the daemons' logs rather than hang CI.
const jobLimit = 6 * time.Minute

// TestSlurmArrayMergesToTheUnshardedRun writes the job files with
// flashcore slurm, submits them to a real one-node Slurm (three array
// tasks of CPU backends, then the merge job with --dependency=afterany),
// waits, and checks the merged file against an unsharded run of the same
// suite: the same rows, input hashes and verdicts.
func TestSlurmArrayMergesToTheUnshardedRun(t *testing.T) {
	skipUnlessPossible(t)
	if os.Getenv("FLASHCORE_PYTHON") == "" && os.Getenv(RequireEnv) != "1" {
		t.Skip("FLASHCORE_PYTHON is not set: the pytorch-sdpa rows need the project's venv (make test-slurm sets it)")
	}
	flashcore := buildtest.Binary(t, "flashcore", "cmd/flashcore")
	plugins := filepath.Dir(buildtest.Plugin(t, "cpu-reference", "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference"))
	if sdpa := buildtest.Plugin(t, "pytorch-sdpa", "plugins/pytorch-sdpa/cmd/flashcore-backend-pytorch-sdpa"); filepath.Dir(sdpa) != plugins {
		plugins += ":" + filepath.Dir(sdpa)
	}
	suite, err := filepath.Abs(filepath.Join("..", "testdata", "shards.toml"))
	if err != nil {
		t.Fatal(err)
	}
	c := startCluster(t)
	work := t.TempDir()
	t.Setenv("FLASHCORE_PLUGIN_PATH", plugins) // sbatch passes the environment on to the tasks

	whole := filepath.Join(work, "whole.json")
	run(t, c, 5*time.Minute, flashcore, "run", "--suite", suite, "--out", whole, "--format", "csv")
	jobs := filepath.Join(work, "jobs")
	run(t, c, time.Minute, flashcore, "slurm", "--suite", suite, "--shards", "3", "--gpus-per-task", "0",
		"--partition", "flashcore", "--time", "10", "--out", jobs, "--flashcore", flashcore)
	submitted := run(t, c, time.Minute, "sh", filepath.Join(jobs, "submit.sh"))
	ids := regexp.MustCompile(`array job (\d+) \(3 task\(s\)\), merge job (\d+)`).FindStringSubmatch(submitted)
	if ids == nil {
		t.Fatalf("submit.sh printed %q", submitted)
	}
	c.waitFor(t, jobLimit, "end of the merge job "+ids[2], func() bool {
		s := c.jobState(ids[2])
		return s != "" && s != "PENDING" && s != "RUNNING" && s != "CONFIGURING" && s != "COMPLETING"
	})
	if s := c.jobState(ids[2]); s != "COMPLETED" {
		t.Fatalf("merge job %s ended %s\n%s\n%s", ids[2], s, jobLogs(jobs), c.logs())
	}
	for i := range 3 {
		if _, err := os.Stat(filepath.Join(jobs, fmt.Sprintf("shard-%d.json", i))); err != nil {
			t.Errorf("array task %d wrote no shard: %v", i, err)
		}
	}
	want, got := rowFacts(t, whole), rowFacts(t, filepath.Join(jobs, "merged.json"))
	if len(want) != 18 || !slices.Equal(want, got) {
		t.Errorf("merged rows differ from the unsharded run's:\nwhole:\n%s\nmerged:\n%s\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"), jobLogs(jobs))
	}
}

// run runs a command with the cluster's environment and returns its
// stdout; a failure or overrun fails the test with the output.
func run(t *testing.T, c *cluster, limit time.Duration, name string, args ...string) string {
	t.Helper()
	cmd := c.command(limit, name, args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func jobLogs(dir string) string {
	var b strings.Builder
	paths, _ := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
	for _, p := range paths {
		data, _ := os.ReadFile(p)
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(p), data)
	}
	return b.String()
}

// rowFacts is what must agree between the merged and the unsharded run:
// which rows, on which inputs, with which verdict.
func rowFacts(t *testing.T, path string) []string {
	t.Helper()
	run, err := results.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]string{}
	for _, c := range run.Cases {
		inputs[c.ID] = c.InputSHA256
	}
	var facts []string
	for _, r := range run.Results {
		facts = append(facts, fmt.Sprintf("%s %s %s input=%s case-input=%s loaded=%s %s", r.CaseID, r.Backend, r.Label,
			r.InputSHA256, inputs[r.CaseID], r.LoadedSHA256, r.Status))
	}
	slices.Sort(facts)
	return facts
}
