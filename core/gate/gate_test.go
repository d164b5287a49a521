package gate_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/flashcore/bench/core/gate"
	"github.com/flashcore/bench/core/report/runreport"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/sdk"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// cudaFacts are the facts cuda-v8 recorded on the H100 for the seed shape
// (registers and shared memory as the driver reported them for the
// launched function).
func cudaFacts(registers, spill string) map[string]string {
	return map[string]string{
		"kernel_function":         "flash_v8",
		"registers_per_thread":    registers,
		"spill_bytes_per_thread":  spill,
		"static_shared_bytes":     "0",
		"dynamic_shared_bytes":    "49152",
		"occupancy_blocks_per_sm": "4",
		"block":                   "96x1x1",
	}
}

func passed(backend string, facts map[string]string) results.Result {
	return results.Result{CaseID: "b1-h8-s512-d64-fp16", Backend: backend, Label: backend, Status: results.StatusPass,
		Check: &results.CheckResult{RelL2Err: 2.7e-4}, Repeats: &results.Repeats{Runs: 3}, Facts: facts}
}

func fixture() *results.Run {
	nondeterministic := passed("racy", nil)
	nondeterministic.Status = results.StatusFail
	nondeterministic.Reason = "nondeterministic: checked run 2 differs from run 1 in 3 elements"
	nondeterministic.Repeats = &results.Repeats{Runs: 3, Differing: 2, DifferingElements: 3, MaxAbsDiff: 0.00098, MaxULPs: 2, RelL2Diff: 3e-6}
	crashed := results.Result{CaseID: "b1-h8-s512-d64-fp16", Backend: "crashy", Label: "crashy", Status: results.StatusError,
		Reason: "fetch: plugin crashed: SIGSEGV", Repeats: &results.Repeats{Runs: 2}}
	skipped := results.Result{CaseID: "b1-h8-s512-d64-fp16", Backend: "cuda-scalar", Label: "cuda-scalar", Status: results.StatusSkip, Reason: "no GPU"}
	return &results.Run{
		Backends: []results.Backend{
			{Name: "cuda-v8", Device: sdk.Device{Kind: "gpu", ComputeCapability: "9.0"}},
			{Name: "cuda-wmma", Device: sdk.Device{Kind: "gpu", ComputeCapability: "9.0"}},
		},
		Results: []results.Result{
			passed("cuda-v8", cudaFacts("96", "0")),
			passed("cuda-wmma", cudaFacts("168", "24")),
			nondeterministic,
			crashed,
			skipped,
		},
	}
}

func TestJudge(t *testing.T) {
	limits := suite.Gates{Runs: 3, MaxRegisters: 128, MaxSpillBytes: 0, MaxSharedBytes: 64 << 10, MinOccupancy: 0.125}
	o := gate.Judge(fixture(), limits)
	want := []string{
		"cuda-wmma on b1-h8-s512-d64-fp16: registers 168 per thread, limit ≤ 128",
		"cuda-wmma on b1-h8-s512-d64-fp16: spills 24 B per thread, limit ≤ 0 B",
		"racy on b1-h8-s512-d64-fp16: determinism 2 of 3 runs differ from run 1, in up to 3 elements: max |diff| 0.00098 (2 ULPs), rel L2 3e-06, limit bit-identical over 3 runs",
		"crashy on b1-h8-s512-d64-fp16: stability ERROR after 2 run(s): fetch: plugin crashed: SIGSEGV, limit 3 runs, no crash, no NaN or Inf",
	}
	if len(o.Failures) != len(want) {
		t.Fatalf("%d failures, want %d: %v", len(o.Failures), len(want), o.Failures)
	}
	for i, f := range o.Failures {
		if f.String() != want[i] {
			t.Errorf("failure %d:\n got %s\nwant %s", i, f, want[i])
		}
	}
	// A nondeterministic row's check passed: correctness is not its fault.
	if j := o.Rows[2].Gates[0]; j.Verdict != gate.Pass {
		t.Errorf("correctness of the nondeterministic row: %+v", j)
	}
	var table, markdown bytes.Buffer
	runreport.WriteGates(&table, o, false)
	runreport.WriteGates(&markdown, o, true)
	golden(t, "judged.table", table.String())
	golden(t, "judged.markdown", markdown.String())
}

// TestPlantedRegisterLimit: the same recorded facts fail a limit below them
// and pass one at them.
func TestPlantedRegisterLimit(t *testing.T) {
	run := &results.Run{Results: []results.Result{passed("cuda-v8", cudaFacts("96", "0"))}}
	for _, tt := range []struct {
		limit int
		pass  bool
	}{{95, false}, {96, true}, {0, true}} {
		o := gate.Judge(run, suite.Gates{Runs: 3, MaxRegisters: tt.limit})
		if o.Passed() != tt.pass {
			t.Errorf("max_registers %d: passed %v, want %v: %v", tt.limit, o.Passed(), tt.pass, o.Failures)
		}
	}
}

func TestTheoreticalOccupancy(t *testing.T) {
	for _, tt := range []struct {
		cc, blocks, block string
		limit             float64
		pass              bool
	}{
		{"9.0", "4", "96x1x1", 0.1875, true},   // 4 blocks × 3 warps = 12 of 64 warps
		{"9.0", "4", "96x1x1", 0.19, false},    // just above
		{"8.9", "4", "96x1x1", 0.25, true},     // 12 of 48 warps on an L4
		{"8.9", "1", "100x1x1", 0.0834, false}, // 4 warps (a partial warp holds a slot) of 48
	} {
		facts := map[string]string{"occupancy_blocks_per_sm": tt.blocks, "block": tt.block}
		run := &results.Run{
			Backends: []results.Backend{{Name: "k", Device: sdk.Device{ComputeCapability: tt.cc}}},
			Results:  []results.Result{passed("k", facts)},
		}
		o := gate.Judge(run, suite.Gates{Runs: 3, MinOccupancy: tt.limit})
		if o.Passed() != tt.pass {
			t.Errorf("cc %s %s blocks of %s, limit %g: passed %v, want %v (%v)", tt.cc, tt.blocks, tt.block, tt.limit, o.Passed(), tt.pass, o.Rows[0].Gates)
		}
	}
}

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
		os.WriteFile(path+".got", []byte(got), 0o644)
		t.Errorf("%s differs (wrote .got):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
