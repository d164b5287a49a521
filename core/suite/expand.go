package suite

import (
	"fmt"
	"math"
	"slices"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// maxElements bounds one tensor: kernels index elements with 32-bit
// integers, and the host holds every tensor in memory.
const maxElements = math.MaxInt32

// cases validates the sweeps and explicit cases and expands them, in file
// order: sweeps first, then explicit cases. A case whose ID is already taken
// is dropped, the first one wins, and a warning says so.
func (d *decoder) cases(sweeps []fileSweep, explicit []fileCase) ([]op.Case, []string) {
	var all []op.Case
	for i, sw := range sweeps {
		if sw.Axes != nil {
			all = append(all, d.opEntry("sweeps", i, sw.Axes, true)...)
			continue
		}
		all = append(all, d.sweep(i, sw)...)
	}
	for i, c := range explicit {
		if c.Axes != nil {
			all = append(all, d.opEntry("cases", i, c.Axes, false)...)
			continue
		}
		if c, ok := d.explicitCase(i, c); ok {
			all = append(all, c)
		}
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

// sweep expands one [[sweeps]] entry as the product of its axes, the last
// axis innermost.
func (d *decoder) sweep(entry int, sw fileSweep) []op.Case {
	before := len(d.problems)
	batch := d.sizeList("sweeps.batch", entry, sw.Batch, true)
	heads := d.sizeList("sweeps.heads", entry, sw.Heads, true)
	kvHeads := d.sizeList("sweeps.kv_heads", entry, sw.KVHeads, false)
	seqQ := d.sizeList("sweeps.seq_q", entry, sw.SeqQ, true)
	seqK := d.sizeList("sweeps.seq_k", entry, sw.SeqK, false)
	headDim := d.sizeList("sweeps.head_dim", entry, sw.HeadDim, true)
	dtypes := listValues(d, "sweeps.dtype", entry, sw.DType, d.dtype)
	causal := listValues(d, "sweeps.causal", entry, sw.Causal, func(string, int, bool) bool { return true })
	dists := listValues(d, "sweeps.distribution", entry, sw.Distribution, d.distribution)
	for _, kv := range kvHeads {
		d.divides("sweeps.kv_heads", entry, kv, heads)
	}
	if len(d.problems) > before {
		return nil
	}
	var out []op.Case
	for _, b := range batch {
		for _, h := range heads {
			for _, kv := range orSame(kvHeads, h) {
				for _, sq := range seqQ {
					for _, sk := range orSame(seqK, sq) {
						for _, hd := range headDim {
							for _, dt := range dtypes {
								for _, c := range causal {
									for _, dist := range dists {
										shape := sdk.Shape{Batch: b, Heads: h, KVHeads: kv, SeqQ: sq, SeqK: sk,
											HeadDim: hd, Causal: c, DType: sdk.DType(dt)}
										out = append(out, d.sized("sweeps", entry, attention.NewCase(shape, op.Distribution(dist))))
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return out
}

// orSame is an optional axis: its values, or the one value it defaults to.
func orSame(values []int, same int) []int {
	if len(values) == 0 {
		return []int{same}
	}
	return values
}

func (d *decoder) explicitCase(entry int, c fileCase) (op.Case, bool) {
	before := len(d.problems)
	shape := sdk.Shape{
		Batch:   d.size("cases.batch", entry, c.Batch),
		Heads:   d.size("cases.heads", entry, c.Heads),
		SeqQ:    d.size("cases.seq_q", entry, c.SeqQ),
		HeadDim: d.size("cases.head_dim", entry, c.HeadDim),
		Causal:  c.Causal.Value,
		DType:   sdk.DType(c.DType.Value),
	}
	shape.KVHeads = shape.Heads
	if c.KVHeads.Set {
		shape.KVHeads = d.size("cases.kv_heads", entry, c.KVHeads)
		d.divides("cases.kv_heads", entry, shape.KVHeads, []int{shape.Heads})
	}
	shape.SeqK = shape.SeqQ
	if c.SeqK.Set {
		shape.SeqK = d.size("cases.seq_k", entry, c.SeqK)
	}
	d.dtype("cases.dtype", entry, c.DType.Value)
	d.distribution("cases.distribution", entry, c.Distribution.Value)
	if len(d.problems) > before {
		return op.Case{}, false
	}
	return d.sized("cases", entry, attention.NewCase(shape, op.Distribution(c.Distribution.Value))), true
}

// size checks a required, positive size of an explicit case.
func (d *decoder) size(key string, entry int, f field[int]) int {
	switch {
	case !f.Set:
		d.problem(key, entry, "required")
	case f.Value <= 0:
		d.problem(key, entry, "must be positive, got %d", f.Value)
	}
	return f.Value
}

// sizeList checks a sweep axis of sizes. An optional axis may be empty.
func (d *decoder) sizeList(key string, entry int, f field[[]int], required bool) []int {
	switch {
	case required && !f.Set:
		d.problem(key, entry, "required")
	case required && len(f.Value) == 0:
		d.problem(key, entry, "must list at least one value")
	}
	for _, v := range f.Value {
		if v <= 0 {
			d.problem(key, entry, "must be positive, got %d", v)
		}
	}
	return f.Value
}

// listValues checks a sweep axis that has a default: when set it must list
// at least one value, and each value must pass valid.
func listValues[T any](d *decoder, key string, entry int, f field[[]T], valid func(string, int, T) bool) []T {
	if len(f.Value) == 0 {
		d.problem(key, entry, "must list at least one value")
	}
	for _, v := range f.Value {
		valid(key, entry, v)
	}
	return f.Value
}

func (d *decoder) dtype(key string, entry int, name string) bool {
	if sdk.DType(name).Valid() {
		return true
	}
	d.problem(key, entry, "unknown dtype %q: want fp16, bf16 or fp32", name)
	return false
}

func (d *decoder) distribution(key string, entry int, name string) bool {
	if op.Distribution(name).Valid() {
		return true
	}
	d.problem(key, entry, "unknown distribution %q: want normal, uniform or outliers", name)
	return false
}

// divides checks that every query-head count is a multiple of kv, so each
// key/value head serves the same number of query heads.
func (d *decoder) divides(key string, entry int, kv int, heads []int) {
	if kv <= 0 {
		return // already reported as not positive
	}
	for _, h := range heads {
		if h > 0 && h%kv != 0 {
			d.problem(key, entry, "%d does not divide heads = %d (each key/value head serves heads/kv_heads query heads)", kv, h)
			return
		}
	}
}

// sized reports a case with a tensor too large to hold: kernels index
// elements with 32-bit integers, and the host holds every tensor in
// memory.
func (d *decoder) sized(key string, entry int, c op.Case) op.Case {
	spec := ops.Of(c).Spec()
	largest := 0.0
	for _, t := range append(slices.Clone(spec.Inputs), spec.Outputs...) {
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
