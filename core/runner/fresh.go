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

// freshAheadMaxFLOPs bounds the cases whose fresh inputs are made ahead,
// by a call's work (op.Work): twice the seed shape's (B1 H8 S512 D64,
// 0.54 GFLOP), whose reference a quarter of an H100 host's 16 cores
// computed mostly within its Runs (the default suite's check of the
// fresh outputs fell from 0.76 to 0.24 s). A larger case's
// reference outlasted the Run on a quarter of the cores (the llm suite's
// B16 H16 S512 D128, every row checked: 0.9–5.7 s a row on an H100's
// host, where the check after the batch, on every core, took 0.1–0.3 s),
// and making its inputs, a backward case's with their exact forward,
// would share the host's cores with the Run's call samples for longer:
// its fresh inputs are made after the batch, as before.
const freshAheadMaxFLOPs = 1 << 30

// freshAhead says whether a row's fresh inputs are made while its Runs
// sample: a GPU row, on a host of freshOverlapCores or more, of a case of
// at most freshAheadMaxFLOPs.
func freshAhead(c op.Case, device sdk.Device, cores int) bool {
	return believedGPU(device) && cores >= freshOverlapCores && smallForAhead(c)
}

// smallForAhead says whether a case is small enough for its fresh inputs
// to be made ahead: a call's work of at most freshAheadMaxFLOPs.
func smallForAhead(c op.Case) bool {
	return ops.Of(c).Work(c, nil).FLOPs <= freshAheadMaxFLOPs
}

// freshInputs are the inputs of a row's recheck (the host's clock on
// inputs no plugin has seen, clock.go), made while its Runs take their
// samples: generated, and the fp64 reference of the rows their check
// compares computed ahead (ops.WarmReference), on a quarter of the host's
// CPUs. The host does nothing else while a Run samples on the GPU, whose
// kernel times the host's CPU use does not enter (the kernel time is the
// device's), and the recheck then only writes them (docs/measurement.md,
// "Where the time goes"). A CPU row's samples are the host's own CPUs'
// time, so its fresh inputs are made afterwards, as before.
type freshInputs struct {
	done chan struct{}
	in   *op.Inputs
}

// startFreshInputs makes a row's fresh inputs in the background where
// freshAhead says so; nil otherwise.
func (r *runner) startFreshInputs(c op.Case, device sdk.Device) *freshInputs {
	cores := runtime.NumCPU()
	if !freshAhead(c, device, cores) {
		return nil
	}
	f := &freshInputs{done: make(chan struct{})}
	settings := r.cfg.Suite.Check
	go func() {
		defer close(f.done)
		f.in = ops.Of(c).Generate(check.FreshSeed(), c)
		ops.WarmReference(c, f.in, settings, cores/4)
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
