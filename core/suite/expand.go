package suite

import (
	"fmt"
	"math"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
)

// maxElements bounds one tensor: kernels index elements with 32-bit
// integers, and the host holds every tensor in memory.
const maxElements = math.MaxInt32

// cases validates the sweeps and explicit cases and expands them, in file
// order: sweeps first, then explicit cases. A case whose ID is already taken
// is dropped, the first one wins, and a warning says so.
func (d *decoder) cases(sweeps, explicit []fileOpEntry) ([]op.Case, []string) {
	var all []op.Case
	for i, e := range sweeps {
		all = append(all, d.opEntry("sweeps", i, e, true)...)
	}
	for i, e := range explicit {
		all = append(all, d.opEntry("cases", i, e, false)...)
	}
	if len(sweeps) == 0 && len(explicit) == 0 {
		d.problems = append(d.problems, &Error{Path: d.path,
			Message: "the suite has no cases: add a [[sweeps]] or [[cases]] entry"})
	}
	return unique(all)
}

func unique(cases []op.Case) ([]op.Case, []string) {
	count := map[string]int{}
	out := cases[:0]
	for _, c := range cases {
		if count[c.ID]++; count[c.ID] == 1 {
			out = append(out, c)
		}
	}
	var warnings []string
	for _, c := range out {
		if n := count[c.ID]; n > 1 {
			warnings = append(warnings, fmt.Sprintf("case %s is defined %d times (its sweeps and cases overlap); it runs once", c.ID, n))
		}
	}
	return out, warnings
}

// sized reports a case with a tensor too large to hold: kernels index
// elements with 32-bit integers, and the host holds every tensor in
// memory.
func (d *decoder) sized(key string, entry int, c op.Case) op.Case {
	spec := ops.Of(c).Spec()
	largest := 0.0
	for _, t := range append(spec.InputsOf(c.Params), spec.OutputsOf(c.Params)...) {
		largest = max(largest, elementCount(t.Shape(c.Params)...))
	}
	if largest > maxElements {
		d.problem(key, entry, "case %s has a tensor of %.0f elements; the limit is %d", c.ID, largest, maxElements)
	}
	return c
}

// elementCount multiplies in float64, so huge sizes cannot overflow.
func elementCount(sizes ...int) float64 {
	n := 1.0
	for _, s := range sizes {
		n *= float64(s)
	}
	return n
}

// TolerancesOf are the tolerances of case c's outputs, in its op's order
// (op.Spec.Tolerances): the suite's table by dtype, each output's factor,
// and the suite's overrides of single outputs.
func (s *Suite) TolerancesOf(c op.Case) []op.Tolerance {
	return ops.Of(c).Spec().Tolerances(c.Params, s.Tolerances, s.OutputTolerances)
}
