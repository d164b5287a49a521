package cudahopper

import (
	"strings"
	"testing"

	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/cudakit/cudatest"
	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/sdk"
)

func TestPlansReachEveryInstantiatedKernel(t *testing.T) {
	cudatest.CheckPlans(t, spec(), kernelSource)
}

// The byte counts are worked out by hand from HopperLayout in kernel.cu, so
// a change to either side shows up here.
func TestSharedBytesMatchTheKernelLayout(t *testing.T) {
	const h100OptIn = 227 * 1024 // the H100's per-block opt-in limit
	tests := []struct {
		headDim, tileN, stages int
		want                   int
	}{
		// Q 128·64·2=16384, K+V 2·2·(64·64·2=8192), barriers 32, slack 1024
		{64, 64, 2, 16384 + 4*8192 + 32 + 1024},
		// Q 128·128·2=32768, K+V 2·3·(128·128·2=32768), barriers 48: the largest
		{128, 128, 3, 32768 + 6*32768 + 48 + 1024},
	}
	for _, tc := range tests {
		if got := sharedBytes(2, tc.headDim, tc.tileN, tc.stages); got != tc.want {
			t.Errorf("sharedBytes(D%d, n%d, s%d) = %d, want %d", tc.headDim, tc.tileN, tc.stages, got, tc.want)
		}
	}
	if got := sharedBytes(2, 128, 128, 3); got > h100OptIn {
		t.Errorf("the largest configuration needs %d bytes, over the H100's %d", got, h100OptIn)
	}
}

func TestPlanGeometry(t *testing.T) {
	s := sdk.Shape{Batch: 2, Heads: 4, KVHeads: 2, SeqQ: 257, SeqK: 131, HeadDim: 128, DType: sdk.BF16, Causal: true}
	l, err := plan(s, map[string]string{tileN: "64", kvStages: "2", overlap: "1", producer: "ahead"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Function != "attn_fwd_bf16_d128_n64_s2_o1_ahead" || l.Grid.X != 3 || l.Block.X != 384 ||
		l.DynamicSharedBytes != sharedBytes(2, 128, 64, 2) {
		t.Errorf("plan = %+v", l)
	}
}

func TestRefusesDevicesOtherThanHopper(t *testing.T) {
	tests := []struct {
		device gpu.DeviceInfo
		want   string // "" when accepted
	}{
		{gpu.DeviceInfo{Name: "NVIDIA H100 80GB HBM3", Major: 9, Minor: 0}, ""},
		{gpu.DeviceInfo{Name: "NVIDIA L4", Major: 8, Minor: 9},
			"cuda-hopper needs a Hopper GPU (compute capability 9.0, sm_90a); NVIDIA L4 has 8.9"},
		{gpu.DeviceInfo{Name: "NVIDIA B200", Major: 10, Minor: 0},
			"cuda-hopper needs a Hopper GPU (compute capability 9.0, sm_90a); NVIDIA B200 has 10.0"},
	}
	for _, tc := range tests {
		got := ""
		if err := requireHopper(tc.device); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("requireHopper(%s) = %q, want %q", tc.device.Name, got, tc.want)
		}
	}
}

// The instructions the README promises are in the sources the fatbin is
// built from (kernel.cu and the shared header); the SASS check is
// scripts/hopper/device-check.sh's, on a Hopper machine.
func TestKernelUsesTheHopperInstructions(t *testing.T) {
	var all strings.Builder
	for _, src := range cudakit.Sources(kernelPath, kernelSource) {
		all.Write(src)
	}
	for _, want := range []string{"wgmma.mma_async", "setmaxnreg.dec", "setmaxnreg.inc", "mbarrier.try_wait.parity",
		"fence.proxy.async", "ex2.approx"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("the kernel sources do not use %s", want)
		}
	}
}

func TestBuiltFatbinMatchesTheSources(t *testing.T) {
	cudatest.CheckBuildOutputsAreCurrent(t, kernelPath, kernelSource)
}
