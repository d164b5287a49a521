package ncu

import (
	"bytes"
	"slices"
	"testing"
)

func TestWriteTiming(t *testing.T) {
	bridges, err := CallsByRange(parseFile(t, "timing-bridges.csv"), parseFile(t, "timing-bridges-renamed.csv"))
	if err != nil {
		t.Fatal(err)
	}
	v8 := RowKey{"b4-h16-s2048-d128-fp16", "cuda-v8"}
	sdpa := RowKey{"b1-h8-s512-d64-fp16", "sdpa"}
	flash := RowKey{"b1-h8-s512-d64-fp16", "sdpa-flash"}
	rows := []TimingRow{
		CompareCalls("cuda-v8", v8, 1803.8e3, CallsOneEach(parseFile(t, "timing-cuda-v8.csv"), v8)),
		CompareCalls("pytorch-sdpa", sdpa, 9.32e3, CallsOf(bridges, sdpa)),
		CompareCalls("pytorch-sdpa", flash, 10.3e3, CallsOf(bridges, flash)),
		CompareCalls("pytorch-sdpa", RowKey{"b1-h8-s512-d64-fp16", "sdpa-math"}, 82e3, nil),
		CompareReference("triton", RowKey{"b1-h8-s512-d64-fp16", "triton"}, 6.43e3, ReferenceCupti,
			[]float64{6.41e3, 6.44e3, 6.40e3, 6.52e3, 6.42e3}, 1),
		CompareReference("pytorch-sdpa", RowKey{"b1-h8-s512-d64-fp16-causal", "sdpa"}, 8.22e3, ReferenceCupti,
			[]float64{8.27e3, 8.26e3, 8.31e3}, 2),
		Errored("pytorch-sdpa", RowKey{"b1-h8-s512-d64-fp16-causal", "sdpa-math"}, 82e3, ReferenceCupti,
			"the profiler recorded no host range for 3 of 30 calls"),
		{Backend: "cpu-reference", Row: RowKey{"b1-h8-s512-d64-fp16", "cpu-reference"}, OursNs: 15.6e6, Verdict: Skip,
			Reason: "timed on the CPU (wall-clock): no GPU kernel"},
	}
	want := []Verdict{Pass, Fail, Pass, Error, Pass, Pass, Error, Skip}
	for i, r := range rows {
		if r.Verdict != want[i] {
			t.Errorf("row %d (%s): %s, want %s", i, r.Row, r.Verdict, want[i])
		}
	}
	var out bytes.Buffer
	if err := WriteTiming(&out, "hot", rows); err != nil {
		t.Fatal(err)
	}
	golden(t, "verify-timing.table", out.String())
}

func TestWriteProfile(t *testing.T) {
	tests := []struct {
		name    string
		backend string
		calls   func(t *testing.T) Call
	}{
		{"cuda-v8", "cuda-v8", func(t *testing.T) Call {
			return CallsOneEach(parseFile(t, "profile-cuda-v8.csv"), RowKey{"b1-h8-s512-d64-fp16", "cuda-v8"})[0]
		}},
		{"sdpa", "pytorch-sdpa", func(t *testing.T) Call {
			calls, err := CallsByRange(parseFile(t, "profile-sdpa.csv"), parseFile(t, "profile-sdpa-renamed.csv"))
			if err != nil || len(calls) != 1 {
				t.Fatalf("%d calls, %v", len(calls), err)
			}
			return calls[0]
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ProfiledCall{Backend: tt.backend, Call: tt.calls(t)}
			for _, k := range c.Call.Kernels {
				c.Kernels = append(c.Kernels, Profile(k))
			}
			var out bytes.Buffer
			if err := WriteProfile(&out, c, "flashcore-profile/"+c.Call.Row.Label+"-"+c.Call.Row.CaseID+".ncu-rep"); err != nil {
				t.Fatal(err)
			}
			golden(t, "profile-"+tt.name+".table", out.String())
		})
	}
}

// TestHintsOfTheSeedKernel: cuda-v8 at the seed shape is small, uses the
// tensor cores little and is held to 3 blocks per SM by its registers.
func TestHintsOfTheSeedKernel(t *testing.T) {
	p := Profile(parseFile(t, "profile-cuda-v8.csv")[0])
	var names []string
	for _, h := range p.Hints {
		names = append(names, h.Name+" <- "+h.Metric)
	}
	want := []string{
		"low tensor-core use <- sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
		"barrier stalls <- smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
		"MIO stalls <- smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
		"occupancy-limited <- sm__warps_active.avg.pct_of_peak_sustained_active",
		"launch-bound <- launch__waves_per_multiprocessor",
	}
	if !slices.Equal(names, want) {
		t.Errorf("hints\n%q\nwant\n%q", names, want)
	}
	if p.Limiter == nil || p.Limiter.Cause != "registers" || p.Limiter.Blocks != 3 {
		t.Errorf("limiter %+v, want registers at 3 blocks", p.Limiter)
	}
}

func TestRuleThresholds(t *testing.T) {
	tests := []struct {
		name  string
		value float64
		fires bool
	}{
		{"memory-bound", 50, true}, {"memory-bound", 49.9, false},
		{"low tensor-core use", 29.9, true}, {"low tensor-core use", 30, false},
		{"occupancy-limited", 49.9, true}, {"occupancy-limited", 50, false},
	}
	for _, tt := range tests {
		i := slices.IndexFunc(rules, func(r rule) bool { return r.name == tt.name })
		if got := rules[i].fires(tt.value); got != tt.fires {
			t.Errorf("%s at %v fires=%v, want %v", tt.name, tt.value, got, tt.fires)
		}
	}
}
