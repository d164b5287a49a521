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

// freshInputs are the inputs of a row's recheck (the host's clock on
// inputs no plugin has seen, clock.go), made while its Runs take their
// samples: generated, and the fp64 reference of the rows their check
// compares computed ahead (ops.WarmReference), on a quarter of the
// host's CPUs. The host does nothing else while a Run samples on the GPU,
// whose kernel times the host's CPU use does not enter (the kernel time
// is the device's), and the recheck then only writes them
// (docs/measurement.md, "Where the time goes"). A CPU row's samples are
// the host's own CPUs' time, so its fresh inputs are made afterwards, as
// before.
type freshInputs struct {
	done chan struct{}
	in   *op.Inputs
}

// startFreshInputs makes a row's fresh inputs in the background where the
// row runs on a GPU and the host has the cores to spare; nil otherwise.
func (r *runner) startFreshInputs(c op.Case, device sdk.Device) *freshInputs {
	cores := runtime.NumCPU()
	if !believedGPU(device) || cores < freshOverlapCores {
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
