package timingcheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/internal/ncu"
	"github.com/flashcore/bench/sdk"
)

func TestCuptiReferenceRow(t *testing.T) {
	row := ncu.TimingRow{Backend: "triton", Row: ncu.RowKey{CaseID: "c", Label: "triton"}, OursNs: 6430}
	tests := []struct {
		name    string
		facts   map[string]string
		verdict ncu.Verdict
		reason  string
	}{
		{"agrees", map[string]string{"reference_ns": "6410 6440 6400", "reference_kernels": "attn_fwd (6.42 µs)"}, ncu.Pass, ""},
		{"too far", map[string]string{"reference_ns": "5000 5100 5050"}, ncu.Fail, ""},
		{"worker could not", map[string]string{"reference_error": "torch.profiler offers no CUDA activity"}, ncu.Error, "no CUDA activity"},
		{"unreadable", map[string]string{"reference_ns": "6410 x"}, ncu.Error, `unreadable reference_ns fact "x"`},
		{"empty", map[string]string{"reference_ns": ""}, ncu.Error, "cupti timed no call"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cuptiReferenceRow(row, tt.facts)
			if got.Verdict != tt.verdict || !strings.Contains(got.Reason, tt.reason) || got.Reference != ncu.ReferenceCupti {
				t.Errorf("got %s %q by %q, want %s with %q", got.Verdict, got.Reason, got.Reference, tt.verdict, tt.reason)
			}
		})
	}
}

func TestKernelChangedUnderNcu(t *testing.T) {
	unprofiled := results.Result{CaseID: "c", Label: "triton", Facts: map[string]string{"config": "BLOCK_M=128 BLOCK_N=64 warps=4 stages=3"}}
	under := func(config string) *results.Run {
		return &results.Run{Results: []results.Result{
			{CaseID: "other", Label: "triton", Facts: map[string]string{"config": "anything"}},
			{CaseID: "c", Label: "triton", Facts: map[string]string{"config": config}},
		}}
	}
	if got := kernelChangedUnderNcu(unprofiled, under("BLOCK_M=128 BLOCK_N=64 warps=4 stages=3")); got != "" {
		t.Errorf("same config: %q", got)
	}
	want := "config: BLOCK_M=128 BLOCK_N=64 warps=4 stages=3 → BLOCK_M=64 BLOCK_N=32 warps=4 stages=4"
	if got := kernelChangedUnderNcu(unprofiled, under("BLOCK_M=64 BLOCK_N=32 warps=4 stages=4")); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := kernelChangedUnderNcu(unprofiled, nil); got != "" {
		t.Errorf("no run: %q", got)
	}
}

// TestShippedBeside: only a plugin that resolves to the flashcore-plugins
// binary beside flashcore may certify its own times; a third-party binary,
// or one elsewhere, is measured by ncu instead.
func TestShippedBeside(t *testing.T) {
	dist, other := t.TempDir(), t.TempDir()
	exe := writeScript(t, filepath.Join(dist, "flashcore"))
	multi := writeScript(t, filepath.Join(dist, "flashcore-plugins"))
	cuda := writeScript(t, filepath.Join(dist, "flashcore-plugins-cuda"))
	cudaLink := filepath.Join(dist, "flashcore-backend-cuda-v8")
	if err := os.Symlink("flashcore-plugins-cuda", cudaLink); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dist, "flashcore-backend-pytorch-sdpa")
	if err := os.Symlink("flashcore-plugins", link); err != nil {
		t.Fatal(err)
	}
	thirdParty := writeScript(t, filepath.Join(dist, "flashcore-backend-liar"))
	elsewhere := writeScript(t, filepath.Join(other, "flashcore-plugins"))
	tests := []struct {
		plugin string
		want   bool
	}{
		{link, true},
		{multi, true},
		{cuda, true},
		{cudaLink, true},
		{thirdParty, false},
		{elsewhere, false},
		{filepath.Join(dist, "missing"), false},
	}
	for _, tt := range tests {
		if got := shippedBeside(exe, tt.plugin); got != tt.want {
			t.Errorf("shippedBeside(%s) = %v, want %v", tt.plugin, got, tt.want)
		}
	}
}

// TestRowsChooseTheReference: a row of a shipped plugin that recorded
// a CUPTI reference is judged by it under auto and cupti; every other row
// (a plugin from elsewhere, whatever it reports, or no reference) goes to
// ncu, and --reference ncu sends every GPU row there.
func TestRowsChooseTheReference(t *testing.T) {
	dist, other := t.TempDir(), t.TempDir()
	exe := writeScript(t, filepath.Join(dist, "flashcore"))
	cuda := writeScript(t, filepath.Join(dist, "flashcore-plugins-cuda"))
	stranger := writeScript(t, filepath.Join(other, "flashcore-backend-stranger"))
	plugins := []host.Plugin{{Name: "cuda-v8", Path: cuda}, {Name: "stranger", Path: stranger}}
	reference := map[string]string{"reference_ns": "27700 27710 27690"}
	row := func(backend, method string, facts map[string]string) results.Result {
		return results.Result{CaseID: "b1-h8-s512-d64-fp16", Backend: backend, Label: backend, Status: results.StatusPass,
			Timings: []results.Timing{{L2: sdk.L2Hot, Method: method, Kernel: results.Stats{N: 50, MedianNs: 27700}, Facts: facts}}}
	}
	run := &results.Run{Results: []results.Result{
		row("cuda-v8", ncu.MethodCUPTISpin, reference),
		row("stranger", ncu.MethodCUPTISpin, reference),
		row("cuda-v8", ncu.MethodSpin, map[string]string{"reference_error": "no CUPTI: not found"}),
		row("cuda-v8", ncu.MethodSpin, nil),
	}}
	tests := []struct {
		reference string
		want      []string // By and verdict of each row; "ncu" for rows left to ncu
	}{
		{ReferenceAuto, []string{"cupti PASS", "ncu", "cupti ERROR", "ncu"}},
		{ncu.ReferenceCupti, []string{"cupti PASS", "SKIP", "cupti ERROR", "SKIP"}},
		{ncu.ReferenceNcu, []string{"ncu", "ncu", "ncu", "ncu"}},
	}
	for _, tt := range tests {
		t.Run(tt.reference, func(t *testing.T) {
			rows := Rows(run, plugins, sdk.L2Hot, tt.reference, exe)
			for i, r := range rows {
				got := strings.TrimSpace(r.Check.Reference + " " + string(r.Check.Verdict))
				if r.Check.Verdict == "" {
					got = "ncu"
				}
				if got != tt.want[i] {
					t.Errorf("row %d (%s, %s): %q (%s), want %q", i, r.Result.Backend, r.Result.Timings[0].Method, got, r.Check.Reason, tt.want[i])
				}
			}
		})
	}
}

// writeScript writes an executable shell script at path and returns path.
func writeScript(t *testing.T, path string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
