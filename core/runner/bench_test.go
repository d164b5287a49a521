package runner

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/progress"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/internal/buildtest"
)

// BenchmarkPluginStart measures what a plugin costs the host before its
// first case: process start, the go-plugin handshake, Describe, and a
// graceful stop.
func BenchmarkPluginStart(b *testing.B) {
	p := host.Plugin{Name: "cpu-reference", Path: buildtest.Plugin(b, "cpu-reference", "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference")}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		inst, err := host.Start(ctx, p, host.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := inst.Backend().Describe(ctx); err != nil {
			b.Fatal(err)
		}
		inst.Close()
	}
}

// overheadSuite has one case so small that the backend's work is a few
// microseconds, and asks for a single sample: what remains per case is the
// host's overhead (inputs generated and written, four RPCs, the check, the
// statistics and the atomic save).
const overheadSuite = `
name = "overhead"
[measurement]
warmup_runs = 0
warmup_time = "0s"
min_samples = 1
max_samples = 1
call_samples = 1
[[sweeps]]
batch = [1]
heads = [1]
seq_q = [16]
head_dim = [64]
`

// BenchmarkHostOverheadPerCase measures one case through the whole host
// pipeline with a plugin already started, reporting time per case.
func BenchmarkHostOverheadPerCase(b *testing.B) {
	p := host.Plugin{Name: "cpu-reference", Path: buildtest.Plugin(b, "cpu-reference", "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference")}
	s, err := suite.Parse("overhead.toml", []byte(overheadSuite))
	if err != nil {
		b.Fatal(err)
	}
	const cases = 20
	for i := 1; i < cases; i++ {
		s.Cases = append(s.Cases, s.Cases[0])
	}
	out := b.TempDir() + "/results.json"
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		r := &runner{cfg: Config{Suite: s, Plugins: []host.Plugin{p}, ResultsPath: out}, progress: progress.Lines(nil)}
		if path := benchResultsPath(out); path != "" {
			r.saver = results.NewWriter(path)
		}
		r.run = newRun(r.cfg)
		r.workDir = workRoot("") // /dev/shm where it exists, as in real runs
		r.startBackends(context.Background())
		rows, err := plan(r.backends, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for i, c := range s.Cases {
			if err := r.runCase(context.Background(), c, fmt.Sprintf("case-%03d", i), rows); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		r.closeBackends()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*cases), "ns/case")
}

// benchResultsPath lets BENCH_NO_SAVE=1 leave the atomic save out, to see
// how much of the overhead it is.
func benchResultsPath(out string) string {
	if os.Getenv("BENCH_NO_SAVE") != "" {
		return ""
	}
	return out
}
