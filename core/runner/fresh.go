package runner

import (
	"runtime"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/sdk"
)

// freshOverlapCores is the fewest CPUs a host must have to make a GPU
// row's fresh inputs while the row's plugin takes its samples: on fewer,
// the host's work would take the cores the plugin queues its calls from.
const freshOverlapCores = 8

// freshWarmMaxFLOPs bounds the cases whose fp64 reference of the fresh
// inputs is computed ahead, by a call's work (op.Work): twice the seed
// shape's (B1 H8 S512 D64, 0.54 GFLOP), which a quarter of a 16-core
// host computes in well under the 0.1–0.3 s a GPU row's Run takes. A
// larger case's reference would outlast the Run on a quarter of the
// cores (the llm suite's B16 H16 S512 D128, every row checked: 2–6 s a
// row on an H100's host, where the check after the batch, on every core,
// took 0.2–0.3 s), so it is computed after the batch, as before.
const freshWarmMaxFLOPs = 1 << 30

// freshPlan says how a row's fresh inputs are made: overlap, in the
// background while its Runs sample (a GPU row on a host of
// freshOverlapCores or more), and warm, with their reference computed
// ahead too (a case of at most freshWarmMaxFLOPs).
func freshPlan(c op.Case, device sdk.Device, cores int) (overlap, warm bool) {
	if !believedGPU(device) || cores < freshOverlapCores {
		return false, false
	}
	return true, warmAhead(c)
}

// warmAhead says whether a case's fresh reference is small enough to be
// computed ahead: a call's work of at most freshWarmMaxFLOPs.
func warmAhead(c op.Case) bool {
	return ops.Of(c).Work(c, nil).FLOPs <= freshWarmMaxFLOPs
}

// freshInputs are the inputs of a row's recheck (the host's clock on
// inputs no plugin has seen, clock.go), made while its Runs take their
// samples: generated, and for a small case the fp64 reference of the rows
// their check compares computed ahead (ops.WarmReference), on a quarter
// of the host's CPUs. The host does nothing else while a Run samples on
// the GPU, whose kernel times the host's CPU use does not enter (the
// kernel time is the device's), and the recheck then only writes them
// (docs/measurement.md, "Where the time goes"). A CPU row's samples are
// the host's own CPUs' time, so its fresh inputs are made afterwards, as
// before.
type freshInputs struct {
	done chan struct{}
	in   *op.Inputs
}

// startFreshInputs makes a row's fresh inputs in the background where
// freshPlan says so; nil otherwise.
func (r *runner) startFreshInputs(c op.Case, device sdk.Device) *freshInputs {
	cores := runtime.NumCPU()
	overlap, warm := freshPlan(c, device, cores)
	if !overlap {
		return nil
	}
	f := &freshInputs{done: make(chan struct{})}
	settings := r.cfg.Suite.Check
	go func() {
		defer close(f.done)
		f.in = ops.Of(c).Generate(check.FreshSeed(), c)
		if warm {
			ops.WarmReference(c, f.in, settings, cores/4)
		}
	}()
	return f
}

// wait returns the inputs once they are made; nil for no freshInputs.
func (f *freshInputs) wait() *op.Inputs {
	if f == nil {
		return nil
	}
	<-f.done
	return f.in
}
