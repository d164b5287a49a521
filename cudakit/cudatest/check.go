package cudatest

import (
	"context"
	"testing"
	"time"

	"github.com/flashcore/bench/conformance"
	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/internal/buildtest"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// FactsEveryCaseRecords are the Prepared facts a CUDA backend must fill.
var FactsEveryCaseRecords = []string{
	"kernel_function", "kernel_source_sha256", "kernel_target", "kernel_compiler", "kernel_compiler_flags",
	"registers_per_thread", "spill_bytes_per_thread", "static_shared_bytes", "dynamic_shared_bytes",
	"max_threads_per_block", "occupancy_blocks_per_sm",
}

// Conformance is what a CUDA plugin asks of the conformance kit: its binary
// (from $FLASHCORE_BIN, or built with the cuda tag when this test binary
// has it), the facts every case must record and the timing method.
func Conformance(t *testing.T, name string) conformance.Options {
	t.Helper()
	return conformance.Options{
		Binary:        buildtest.Plugin(t, name, buildtest.PluginMain(name)),
		RequiredFacts: FactsEveryCaseRecords,
		Method:        cudakit.MethodCUPTISpin,
	}
}

// available describes backend and fails t unless it is available; it
// closes the backend when t ends.
func available(t *testing.T, backend sdk.Backend) sdk.Description {
	t.Helper()
	if closer, ok := backend.(sdk.Closer); ok {
		t.Cleanup(func() {
			if err := closer.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	desc, err := backend.Describe(context.Background())
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	if !desc.Available {
		t.Fatalf("%s is unavailable on a machine with a GPU: %s", desc.Name, desc.UnavailableReason)
	}
	if len(desc.Variants) != 1 {
		t.Fatalf("%s offers %d variants, want 1", desc.Name, len(desc.Variants))
	}
	t.Logf("%s %s (%s) on %s, CC %s, %d SMs, %.0f MHz, peak %.0f TFLOP/s, %.0f GB/s, driver %s",
		desc.Name, desc.Version, desc.Build, desc.Device.Name, desc.Device.ComputeCapability,
		desc.Device.Multiprocessors, desc.Device.SMClockMHz, desc.Device.PeakTFLOPS, desc.Device.PeakGBps, desc.Device.Driver)
	return desc
}

// Timing measures, in process, the seed shape (B1 H8 S512 D64 fp16) with
// every combination of the tunables that apply to attention and a large shape (B4 H16 S2048 D128 fp16)
// with the defaults, each with the contract's default measurement (time
// cap shortened to 1 s) in hot and cold L2 mode, and logs the figures. It
// checks nothing about the output: the conformance kit does that.
func Timing(t *testing.T, backend sdk.Backend, tunables []sdk.Tunable) {
	t.Helper()
	desc := available(t, backend)
	small := sdk.Shape{Batch: 1, Heads: 8, KVHeads: 8, SeqQ: 512, SeqK: 512, HeadDim: 64, DType: sdk.FP16}
	large := sdk.Shape{Batch: 4, Heads: 16, KVHeads: 16, SeqQ: 2048, SeqK: 2048, HeadDim: 128, DType: sdk.FP16}
	cases := []conformance.Case{{Case: attention.NewCase(small, op.Normal)}, {Case: attention.NewCase(large, op.Normal)}}
	for _, combo := range conformance.Combinations(conformance.TunablesOf(tunables, attention.Name)) {
		cases = append(cases, conformance.Case{Case: attention.NewCase(small, op.Normal), Tunables: combo})
	}
	for _, c := range cases {
		t.Run(c.Name(), func(t *testing.T) { timeCase(t, backend, desc, c) })
	}
}

func timeCase(t *testing.T, backend sdk.Backend, desc sdk.Description, c conformance.Case) {
	tensors := inputs.Generate(suite.Default().Seed, c.Case)
	files, err := inputs.WriteFiles(t.TempDir(), tensors)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	prepared, err := backend.Prepare(ctx, sdk.PrepareRequest{CaseID: c.ID, Variant: desc.Variants[0].Name,
		Shape: attention.ShapeOf(c.Case), Tunables: c.Tunables, Files: files, InputSHA256: tensors.SHA256})
	if err != nil || len(prepared.Diagnostics) > 0 {
		t.Fatalf("Prepare: %v %+v", err, prepared.Diagnostics)
	}
	defer backend.Release(ctx, sdk.ReleaseRequest{CaseID: c.ID})
	for _, mode := range []sdk.L2Mode{sdk.L2Hot, sdk.L2Cold} {
		m := sdk.DefaultMeasurement()
		m.TimeCap = time.Second
		m.L2 = mode
		samples, err := backend.Run(ctx, sdk.RunRequest{CaseID: c.ID, Measurement: m})
		if err != nil {
			t.Fatalf("Run (%s L2): %v", mode, err)
		}
		if len(samples.KernelTimes) < m.MinSamples {
			t.Fatalf("Run (%s L2): %d samples", mode, len(samples.KernelTimes))
		}
		kernel := sdk.MedianDuration(samples.KernelTimes)
		t.Logf("TIMING %s %s %s L2: kernel %.2f µs (n=%d, noise %.2f%%, %.1f TFLOP/s), call %.2f µs, SM clock %.0f MHz, %s, spin %s µs, retries %s",
			desc.Name, c.Name(), mode, us(kernel), len(samples.KernelTimes), 100*sdk.RelativeNoise(samples.KernelTimes),
			flops(attention.ShapeOf(c.Case))/kernel.Seconds()/1e12, us(sdk.MedianDuration(samples.CallTimes)), samples.SMClockMHz,
			prepared.Facts["kernel_function"], samples.Facts["spin_us"], samples.Facts["spin_retries"])
	}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// flops counts 4·B·H·D per unmasked query–key pair (docs/measurement.md).
func flops(s sdk.Shape) float64 {
	pairs := s.SeqQ * s.SeqK
	if s.Causal {
		pairs = 0
		for i := range s.SeqQ {
			pairs += min(i+1, s.SeqK)
		}
	}
	return 4 * float64(s.Batch*s.Heads*s.HeadDim) * float64(pairs)
}
