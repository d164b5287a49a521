package runner

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/ops/mask"
	"github.com/flashcore/bench/sdk"
)

func durations(ns ...int) []time.Duration {
	out := make([]time.Duration, len(ns))
	for i, n := range ns {
		out[i] = time.Duration(n)
	}
	return out
}

func TestSampleRules(t *testing.T) {
	m := sdk.Measurement{MinSamples: 3, MaxSamples: 5, CallSamples: 2, Placements: 2}
	tests := []struct {
		name    string
		samples sdk.Samples
		want    string
	}{
		{"fine", sdk.Samples{KernelTimes: durations(10, 11, 12), CallTimes: durations(20, 21)}, ""},
		{"too few", sdk.Samples{KernelTimes: durations(10), CallTimes: durations(20, 21)}, "returned 1 kernel-time samples; the suite asks for at least min_samples = 3"},
		{"too many", sdk.Samples{KernelTimes: durations(1, 2, 3, 4, 5, 6), CallTimes: durations(20, 21)}, "at most max_samples = 5"},
		{"few calls", sdk.Samples{KernelTimes: durations(10, 11, 12), CallTimes: durations(20)}, "call_samples = 2"},
		{"zero kernel", sdk.Samples{KernelTimes: durations(10, 0, 12), CallTimes: durations(20, 21)}, "kernel-time sample 2 is 0s"},
		{"negative call", sdk.Samples{KernelTimes: durations(10, 11, 12), CallTimes: durations(20, -21)}, "call-time sample 2 is -21ns"},
		{"blocks", sdk.Samples{KernelTimes: durations(10, 11, 12), CallTimes: durations(20, 21), KernelBlocks: []int{2, 1}}, ""},
		{"too many blocks", sdk.Samples{KernelTimes: durations(10, 11, 12), CallTimes: durations(20, 21), KernelBlocks: []int{1, 1, 1}}, "3 placement blocks; the suite asks for placements = 2"},
		{"empty block", sdk.Samples{KernelTimes: durations(10, 11, 12), CallTimes: durations(20, 21), KernelBlocks: []int{3, 0}}, "block 2 holds 0 samples"},
		{"blocks short of the samples", sdk.Samples{KernelTimes: durations(10, 11, 12), CallTimes: durations(20, 21), KernelBlocks: []int{1, 1}}, "blocks of 2 samples in all, but 3"},
		{"huge cross-check", sdk.Samples{KernelTimes: durations(10, 11, 12), CallTimes: durations(20, 21), CrossCheckTimes: []time.Duration{2 * time.Hour}}, "cross-check-time sample 1 is 2h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SampleRuleViolation(tt.samples, m)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPhysicalCeilings(t *testing.T) {
	shape := sdk.Shape{Batch: 4, Heads: 16, KVHeads: 16, SeqQ: 2048, SeqK: 2048, HeadDim: 128, DType: sdk.FP16}
	// 4·B·H·S²·D = 137.4 GFLOP; at 1000 TFLOP/s that takes 137 µs.
	h100 := Ceilings{TFLOPS: 1000, GBps: 3350, Source: "H100 peak"}
	tests := []struct {
		name    string
		fastest time.Duration
		mode    sdk.L2Mode
		device  sdk.Device
		want    string
	}{
		{"at 90% of peak", 153 * time.Microsecond, sdk.L2Hot, sdk.Device{}, ""},
		{"above the FLOP peak", 100 * time.Microsecond, sdk.L2Hot, sdk.Device{}, "implausible: a 100µs kernel sample means 1374 TFLOP/s, above H100 peak of 1000 TFLOP/s"},
		// 4 tensors of 16.8 MB = 67 MB; at 3350 GB/s that takes 20 µs.
		{"above the memory peak, cold", 15 * time.Microsecond, sdk.L2Cold, sdk.Device{}, "GB/s, above the memory peak"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := h100
			if tt.name == "above the memory peak, cold" {
				c.TFLOPS = 1e6 // only the memory bound applies
			}
			got := physicalViolation(op.Work{FLOPs: attention.FLOPs(shape, mask.Plain(shape.Causal)), Bytes: attention.Bytes(shape)}, sdk.Samples{KernelTimes: []time.Duration{tt.fastest, 2 * tt.fastest}}, tt.mode, tt.device, c)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestKernelWithinCall(t *testing.T) {
	us := func(xs ...int) []time.Duration {
		out := make([]time.Duration, len(xs))
		for i, x := range xs {
			out[i] = time.Duration(x) * time.Microsecond
		}
		return out
	}
	tests := []struct {
		name         string
		kernel, call []time.Duration
		inconsistent bool
	}{
		{"kernel well inside call", us(100, 101, 102, 103), us(150, 160, 170), false},
		{"CPU backend: equal within noise", us(6400, 6500, 6515, 6600), us(6300, 6321, 6349), false},
		{"kernel twice the call", us(200, 201, 202, 203), us(100, 101, 102), true},
		{"no call samples", us(100, 101), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := consistencyViolation(sdk.Samples{KernelTimes: tt.kernel, CallTimes: tt.call})
			if (got != "") != tt.inconsistent {
				t.Errorf("got %q, want inconsistent=%v", got, tt.inconsistent)
			}
		})
	}
}

func TestThrottled(t *testing.T) {
	state := func(mhz float64) *sdk.DeviceState { return &sdk.DeviceState{SMClockMHz: mhz} }
	tests := []struct {
		before, after *sdk.DeviceState
		want          bool
	}{
		{state(1980), state(1980), false},
		{state(1980), state(1800), false}, // 9% down
		{state(1980), state(1590), true},  // 20% down
		{state(1590), state(1980), false}, // up is not a throttle
		{nil, state(1000), false},
		{state(0), state(1000), false},
	}
	for _, tt := range tests {
		got, note := throttled(sdk.Samples{Before: tt.before, After: tt.after})
		if got != tt.want || got && !strings.Contains(note, "SM clock fell from") {
			t.Errorf("%+v → %+v: throttled %v %q, want %v", tt.before, tt.after, got, note, tt.want)
		}
	}
}

// TestFakeGPUNodeIsNoGPU: an empty /dev/nvidiactl that anyone could make
// on a machine without the NVIDIA driver does not earn a plugin that
// claims a GPU the GPU's ceiling: the driver must answer.
func TestFakeGPUNodeIsNoGPU(t *testing.T) {
	if len(hostGPUUUIDs()) > 0 {
		t.Skip("this machine has an NVIDIA GPU")
	}
	const node = "/dev/nvidiactl"
	if _, err := os.Stat(node); os.IsNotExist(err) {
		if err := os.WriteFile(node, nil, 0o644); err != nil {
			t.Skipf("cannot make an empty %s here (%v)", node, err)
		}
		t.Cleanup(func() { os.Remove(node) })
	}
	cpu := Ceilings{TFLOPS: 0.5, Source: "cpu"}
	got := ceilingsFor(sdk.Device{Kind: "gpu", Name: "NVIDIA H100 80GB HBM3", PeakTFLOPS: 989}, cpu)
	if got.TFLOPS != cpu.TFLOPS || !strings.Contains(got.Source, "NVIDIA driver lists none") {
		t.Errorf("a claimed GPU beside a fake device node got %+v, want the CPU's ceiling and why", got)
	}
}

// TestClaimedGPUMustBeTheHosts: where the NVIDIA driver lists GPUs, a
// backend earns a GPU's ceiling only by naming one of them by UUID.
func TestClaimedGPUMustBeTheHosts(t *testing.T) {
	saved := hostGPUUUIDs
	t.Cleanup(func() { hostGPUUUIDs = saved })
	hostGPUUUIDs = func() []string {
		return []string{"GPU-8a7b6c5d-aaaa-bbbb-cccc-111111111111", "MIG-0f1e2d3c-dddd-eeee-ffff-222222222222"}
	}
	cpu := Ceilings{TFLOPS: 0.5, Source: "cpu"}
	h100 := func(uuid string) sdk.Device {
		return sdk.Device{Kind: "gpu", Name: "NVIDIA H100 80GB HBM3", PeakTFLOPS: 989, PeakGBps: 3350, UUID: uuid}
	}
	tests := []struct {
		name   string
		device sdk.Device
		gpu    bool
		source string
	}{
		{"the host's GPU", h100("GPU-8a7b6c5d-aaaa-bbbb-cccc-111111111111"), true, "H100 80GB HBM3 peak"},
		{"spelt without the prefix, in capitals", h100("8A7B6C5D-AAAA-BBBB-CCCC-111111111111"), true, "peak"},
		{"a MIG instance the driver lists", h100("MIG-0f1e2d3c-dddd-eeee-ffff-222222222222"), true, "peak"},
		{"no UUID", h100(""), false, "gives no UUID to show which"},
		{"another machine's GPU", h100("GPU-00000000-0000-0000-0000-000000000000"), false, "which is none of the host's"},
		{"a CPU", sdk.Device{Kind: "cpu"}, false, "cpu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ceilingsFor(tt.device, cpu)
			if (got.TFLOPS != cpu.TFLOPS) != tt.gpu || !strings.Contains(got.Source, tt.source) {
				t.Errorf("ceilingsFor = %+v, want GPU %v with %q", got, tt.gpu, tt.source)
			}
		})
	}
}

// TestJudgeBatch: the host's two rules for its batch, on each device kind.
func TestJudgeBatch(t *testing.T) {
	saved := hostGPUUUIDs
	t.Cleanup(func() { hostGPUUUIDs = saved })
	hostGPUUUIDs = func() []string { return []string{"GPU-8a7b6c5d-aaaa-bbbb-cccc-111111111111"} }
	gpu, cpu := sdk.Device{Kind: "gpu", UUID: "GPU-8a7b6c5d-aaaa-bbbb-cccc-111111111111"}, sdk.Device{Kind: "cpu"}
	ms := time.Millisecond
	tests := []struct {
		name                        string
		n                           int
		wall, batchKernel, reported time.Duration
		device                      sdk.Device
		want                        string
	}{
		{"cpu honest", 10, 105 * ms, 10 * ms, 10 * ms, cpu, ""},
		{"cpu busy machine slows both", 10, 900 * ms, 80 * ms, 10 * ms, cpu, ""},
		{"cpu clock divided by 8", 1, 400 * ms, 50 * ms, 50 * ms, cpu, "the host timed 1 calls"},
		{"gpu honest, host costs per call", 4, 20 * ms, 10 * time.Microsecond, 10 * time.Microsecond, gpu, ""},
		{"gpu clock divided by 8", 2, 1000 * ms, 62 * ms, 62 * ms, gpu, "the host timed 2 calls"},
		{"gpu honest only when watched", 4, 2100 * ms, 500 * ms, 62 * ms, gpu, "more than 4× apart"},
		{"cpu honest only when watched: not told from load", 4, 2100 * ms, 500 * ms, 62 * ms, cpu, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := judgeBatch(tt.n, tt.wall, tt.batchKernel, tt.reported, 1<<20, tt.device)
			if (tt.want == "") != (v.reason == "") || !strings.Contains(v.reason, tt.want) {
				t.Errorf("reason %q, want %q", v.reason, tt.want)
			}
		})
	}
}

// TestBuiltinRowsMatchThePlugins keeps the host's list of this project's
// row names (names.go) true: every plugin folder that is a backend is in
// it, and pytorch-sdpa's rows are the variants its worker declares, of
// every op.
func TestBuiltinRowsMatchThePlugins(t *testing.T) {
	mains, _ := filepath.Glob("../../plugins/*/main.go")
	for _, m := range mains {
		name := filepath.Base(filepath.Dir(m))
		if name == "python-file" || name == "cuda-file" { // no backend of their own
			continue
		}
		if owner, ok := RowOwner(name); !ok || owner != name {
			t.Errorf("plugin %s: builtinRows has no row %q of its own", name, name)
		}
	}
	worker, err := os.ReadFile("../../plugins/pytorch-sdpa/sdpa_backend.py")
	if err != nil {
		t.Fatal(err)
	}
	declared := regexp.MustCompile(`(?m)^    "([a-z][a-z0-9-]*)": \(`).FindAllStringSubmatch(string(worker), -1)
	if len(declared) < 5 {
		t.Fatalf("found %d variants in sdpa_backend.py's VARIANTS", len(declared))
	}
	var names []string
	for _, d := range declared {
		names = append(names, d[1])
		if owner, _ := RowOwner(d[1]); owner != "pytorch-sdpa" {
			t.Errorf("pytorch-sdpa declares %q; builtinRows gives it to %q", d[1], owner)
		}
	}
	for row, owner := range builtinRows {
		if owner == "pytorch-sdpa" && row != "pytorch-sdpa" && !slices.Contains(names, row) {
			t.Errorf("builtinRows names %q, which pytorch-sdpa no longer declares", row)
		}
	}
}
