package ncu

import "github.com/flashcore/bench/sdk"

// Process is the process ncu has to start to see a backend's kernels.
type Process int

const (
	// PluginProcess: the plugin itself launches its kernels (Go CUDA
	// plugins). The host starts it under the plugin wrapper.
	PluginProcess Process = iota
	// WorkerProcess: the plugin starts a Python worker that launches them
	// (the bridges). Profilers follow children through libc's exec, which
	// Go does not use, so ncu must wrap the worker (the worker wrapper).
	WorkerProcess
)

// The timing methods results record (docs/measurement.md), which say how
// a row was timed and so how ncu reaches it.
const (
	// MethodCUPTISpin is the Go CUDA plugins' method where CUPTI is
	// there, MethodSpin their method where it is not and under a profiler
	// (cudakit).
	MethodCUPTISpin = sdk.MethodCUPTISpin
	MethodSpin      = sdk.MethodCUDAEventsSpin
	// MethodCUPTI is the Python bridges' method on a GPU (flashcore_cupti.py).
	MethodCUPTI = "cupti"
	// MethodSleep is the Python bridges' fallback (flashcore_worker.py),
	// and their method under a profiler, which holds CUPTI.
	MethodSleep = "cuda-events+sleep"
)

// AttentionKernels matches the attention kernels of the Go CUDA plugins in
// every mode: cudakit.KernelName names the forward's
// attn_fwd_<dtype>_d<D>[_suffix] and cudakit.ModeKernelName the other
// modes' attn_bwd_… and attn_fwdbwd_…, and the plugins launch nothing
// else per call but the spin and the L2 flush (flashcore_spin,
// flashcore_flush_l2), which must not be counted.
const AttentionKernels = "^attn_"

// OuterRange is the NVTX push/pop range a backend under a profiler opens
// around every call; the call's own range (see CallRange) is nested inside it.
const OuterRange = sdk.ProfilerOuterRange

// Reach is how ncu gets to the kernels of one backend's timed calls.
type Reach struct {
	Process Process
	// KernelRegex picks the kernels by name; "" takes every kernel.
	KernelRegex string
	// NVTX: only kernels inside OuterRange are profiled, and each call's
	// kernels carry its CallRange, which names the row and the call.
	NVTX bool
}

// ReachFor is how ncu reaches rows timed by method; false for methods that
// time no GPU kernel (wall-clock on a CPU).
func ReachFor(method string) (Reach, bool) {
	switch method {
	case MethodCUPTISpin, MethodSpin:
		return Reach{Process: PluginProcess, KernelRegex: AttentionKernels, NVTX: true}, true
	case MethodCUPTI, MethodSleep:
		return Reach{Process: WorkerProcess, NVTX: true}, true
	}
	return Reach{}, false
}

// OneRowPerSession reports whether ncu's records carry no row identity,
// so that one ncu session may hold one row only.
func (r Reach) OneRowPerSession() bool { return !r.NVTX }

// selection is the ncu filter arguments of r.
func (r Reach) selection() []string {
	var args []string
	if r.KernelRegex != "" {
		args = append(args, "--kernel-name", "regex:"+r.KernelRegex)
	}
	if r.NVTX {
		args = append(args, "--nvtx", "--nvtx-include", OuterRange+"/")
	}
	return args
}
