package results

import "github.com/flashcore/bench/sdk"

// PrimaryMode is the L2 mode the run's tables and comparisons read: the
// suite's first, else the first a row was timed in, else hot.
func (run *Run) PrimaryMode() sdk.L2Mode {
	if len(run.Suite.L2Modes) > 0 {
		return run.Suite.L2Modes[0]
	}
	for _, r := range run.Results {
		if t, ok := r.Primary(); ok {
			return t.L2
		}
	}
	return sdk.L2Hot
}

// RowLabel is what names the row best: its label, else its variant, else
// its backend.
func (r *Result) RowLabel() string {
	switch {
	case r.Label != "":
		return r.Label
	case r.Variant != "":
		return r.Variant
	}
	return r.Backend
}

// RowNamer names the rows of one or more runs the same way in every table:
// by RowLabel, or "backend/label" when two backends in any of the runs use
// the same label, so that rows of different backends never look alike and
// are never matched with each other.
type RowNamer struct {
	backendsOf map[string]map[string]bool // label → backends using it
}

// NewRowNamer learns the labels of runs.
func NewRowNamer(runs ...*Run) RowNamer {
	n := RowNamer{backendsOf: map[string]map[string]bool{}}
	for _, run := range runs {
		for i := range run.Results {
			r := &run.Results[i]
			label := r.RowLabel()
			if n.backendsOf[label] == nil {
				n.backendsOf[label] = map[string]bool{}
			}
			n.backendsOf[label][r.Backend] = true
		}
	}
	return n
}

// Name is r's name in the tables.
func (n RowNamer) Name(r *Result) string {
	label := r.RowLabel()
	if len(n.backendsOf[label]) > 1 {
		return r.Backend + "/" + label
	}
	return label
}
