package ops

import (
	"slices"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
)

// faceted is what a charted op (Spec().Chart set) offers beyond Op: the
// panel each of its cases is drawn in.
type faceted interface {
	Facet(p op.Params) op.Facet
}

// ChartOf is how the charts draw the cases of an op, and the panel of a
// case with these params; ok is false for an op the charts leave out (or
// one unknown to this build).
func ChartOf(opName string, p op.Params) (chart op.Chart, facet op.Facet, ok bool) {
	o, known := registry[opName]
	if !known || o.Spec().Chart == nil {
		return op.Chart{}, op.Facet{}, false
	}
	f, isFaceted := o.(faceted)
	if !isFaceted {
		return *o.Spec().Chart, op.Facet{Name: opName, Title: opName, Order: opName}, true
	}
	return *o.Spec().Chart, f.Facet(p), true
}

// workCounted is what an op whose FLOPs follow a convention beyond the
// arithmetic offers beyond Op: how a case's throughput column should say
// what it counts.
type workCounted interface {
	WorkNote(p op.Params) string
}

// WorkNote is what the throughput column of a case of the op counts,
// beyond its plain work, as tables title it ("bwd = 2.5× fwd"); "" for
// most cases and ops.
func WorkNote(opName string, p op.Params) string {
	if w, ok := registry[opName].(workCounted); ok {
		return w.WorkNote(p)
	}
	return ""
}

// ParamColumns are the columns a table of cases gives their params: the
// axes of attention, always, in their order (every results file had
// them), then the axes of each other op of opNames that are not listed
// yet, in the order the ops come. An axis marked OmitDefault has a
// column only where used says some case sets it, so that a table of
// cases that leave it out keeps the columns it had before the axis
// existed.
func ParamColumns(opNames []string, used func(axis string) bool) []string {
	var columns []string
	add := func(spec op.Spec) {
		for _, a := range spec.Axes {
			if !slices.Contains(columns, a.Name) && (!a.OmitDefault || used(a.Name)) {
				columns = append(columns, a.Name)
			}
		}
	}
	add(attention.Spec)
	for _, name := range opNames {
		if o, ok := registry[name]; ok {
			add(o.Spec())
		}
	}
	return columns
}
