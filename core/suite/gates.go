package suite

import (
	"fmt"
	"math"
	"strings"
)

// Gates are the limits `flashcore gate` holds every row to ([gates] in a
// suite, docs/loop.md). Correctness is always judged; the other gates are
// judged where their limit is set.
type Gates struct {
	// Runs is how many times each row's checked run is done on the same
	// inputs: their outputs must be bit-identical (determinism) and none
	// may crash or hold NaN or Inf (stability). It replaces [check]
	// repeat while gating.
	Runs int
	// MaxRegisters bounds the registers per thread of the kernel a CUDA
	// backend launched; 0 leaves them unjudged.
	MaxRegisters int
	// MaxSpillBytes bounds the local memory (spill) bytes per thread; -1
	// leaves it unjudged. The default, 0, is the seeds' "0 spills" gate.
	MaxSpillBytes int
	// MaxSharedBytes bounds the static and dynamic shared memory of one
	// block; 0 leaves it unjudged.
	MaxSharedBytes int
	// MinOccupancy is the least theoretical occupancy, the fraction of the
	// SM's warp slots the launched blocks can hold (0.25 is 25%); 0 leaves
	// it unjudged.
	MinOccupancy float64
}

// DefaultGates are the gates of a suite without a [gates] table.
func DefaultGates() Gates {
	return Gates{Runs: 3, MaxSpillBytes: 0}
}

// Ablation is the [ablation] table: an ordered chain of backends or
// backend variants, each written "backend" (its first variant) or
// "backend:variant", that `flashcore ablate` runs and compares step by
// step.
type Ablation struct {
	Chain []ChainStep
}

// ChainStep is one step of an ablation chain.
type ChainStep struct {
	Backend string
	// Variant is empty for the backend's first variant.
	Variant string
}

// String writes the step as the chain lists it.
func (s ChainStep) String() string {
	if s.Variant == "" {
		return s.Backend
	}
	return s.Backend + ":" + s.Variant
}

// ParseChain reads a chain written "a,b:variant,c" or as a list of such
// steps. The error names the step at fault.
func ParseChain(steps []string) ([]ChainStep, error) {
	var chain []ChainStep
	for i, raw := range steps {
		step := strings.TrimSpace(raw)
		backend, variant, hasVariant := strings.Cut(step, ":")
		if backend == "" || (hasVariant && variant == "") {
			return nil, fmt.Errorf("step %d (%q) is not \"backend\" or \"backend:variant\"", i+1, raw)
		}
		chain = append(chain, ChainStep{Backend: backend, Variant: variant})
	}
	return chain, nil
}

type fileGates struct {
	Runs           field[int]     `toml:"runs"`
	MaxRegisters   field[int]     `toml:"max_registers"`
	MaxSpillBytes  field[int]     `toml:"max_spill_bytes"`
	MaxSharedBytes field[int]     `toml:"max_shared_bytes"`
	MinOccupancy   field[float64] `toml:"min_occupancy"`
}

type fileAblation struct {
	Chain field[[]string] `toml:"chain"`
}

func (d *decoder) gates(f fileGates) Gates {
	g := DefaultGates()
	g.Runs = f.Runs.Or(g.Runs)
	g.MaxRegisters = f.MaxRegisters.Or(g.MaxRegisters)
	g.MaxSpillBytes = f.MaxSpillBytes.Or(g.MaxSpillBytes)
	g.MaxSharedBytes = f.MaxSharedBytes.Or(g.MaxSharedBytes)
	g.MinOccupancy = f.MinOccupancy.Or(g.MinOccupancy)
	d.atLeast("gates.runs", g.Runs, 1)
	d.atLeast("gates.max_registers", g.MaxRegisters, 0)
	d.atLeast("gates.max_spill_bytes", g.MaxSpillBytes, -1)
	d.atLeast("gates.max_shared_bytes", g.MaxSharedBytes, 0)
	if !(g.MinOccupancy >= 0 && g.MinOccupancy <= 1) || math.IsNaN(g.MinOccupancy) {
		d.problem("gates.min_occupancy", -1, "must be a fraction from 0 to 1 (0.25 is 25%%), got %g", g.MinOccupancy)
	}
	return g
}

func (d *decoder) ablation(f fileAblation) Ablation {
	if !f.Chain.Set {
		return Ablation{}
	}
	chain, err := ParseChain(f.Chain.Value)
	switch {
	case err != nil:
		d.problem("ablation.chain", -1, "%v", err)
	case len(chain) < 2:
		d.problem("ablation.chain", -1, "must list at least two steps, got %d", len(chain))
	}
	return Ablation{Chain: chain}
}
