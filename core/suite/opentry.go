package suite

import (
	"slices"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
)

// opEntry validates and expands a [[sweeps]] or [[cases]] entry, of any
// op. Its keys are the op's axes (op.Spec), plus op and distribution; step
// 2 checked their types. In a sweep each key lists values and the cases
// are their product, the first axis outermost, the distribution
// innermost; in a case each key holds one value. An axis left out takes
// its default, or the value of the axis it is the same as; one marked
// OmitDefault is left out of the params (op.Axis.OmitDefault).
func (d *decoder) opEntry(table string, entry int, e fileOpEntry, sweep bool) []op.Case {
	o, err := ops.Lookup(e.op)
	if err != nil {
		d.problem(table+".op", entry, "%s", err.Error())
		return nil
	}
	spec := o.Spec()
	before := len(d.problems)
	axisValues := make([][]string, len(spec.Axes))
	for i, a := range spec.Axes {
		key := table + "." + a.Name
		raw, set := e.values[a.Name]
		switch {
		case a.Derived != "":
			if set {
				d.problem(key, entry, "is derived (%s): leave it out", a.Derived)
			}
		case set:
			axisValues[i] = d.axisValues(key, entry, a, raw, sweep)
		case a.Required():
			d.problem(key, entry, "required")
			axisValues[i] = []string{} // absent when relations are checked
		case a.OmitDefault:
			axisValues[i] = []string{} // absent: its default
		case a.SameAs == "":
			axisValues[i] = []string{a.Default}
		}
	}
	dists := d.distributions(table+".distribution", entry, e.values["distribution"], sweep)
	d.relations(table, entry, o, axisValues)
	if len(d.problems) > before {
		return nil
	}
	return d.expand(table, entry, o, axisValues, dists)
}

// axisValues checks the values of one axis, a list in a sweep, and
// returns those that pass. nil, for an empty list of an axis that is the
// same as another, leaves the axis out.
func (d *decoder) axisValues(key string, entry int, a op.Axis, raw any, sweep bool) []string {
	list := []any{raw}
	if sweep {
		list = raw.([]any) // step 2 checked the type
		if len(list) == 0 && a.SameAs != "" {
			return nil
		}
		if len(list) == 0 {
			d.problem(key, entry, "must list at least one value")
		}
	}
	out := make([]string, 0, len(list))
	for _, v := range list {
		text, problem := a.ParseValue(v)
		if problem != "" {
			d.problem(key, entry, "%s", problem)
			continue
		}
		out = append(out, text)
	}
	return out
}

// distributions checks the distribution key of an op entry, normal when
// left out.
func (d *decoder) distributions(key string, entry int, raw any, sweep bool) []op.Distribution {
	if raw == nil {
		return []op.Distribution{op.Normal}
	}
	list := []any{raw}
	if sweep {
		list = raw.([]any) // step 2 checked the type
		if len(list) == 0 {
			d.problem(key, entry, "must list at least one value")
		}
	}
	var out []op.Distribution
	for _, v := range list {
		name := v.(string)
		if d.distribution(key, entry, name) {
			out = append(out, op.Distribution(name))
		}
	}
	return out
}

func (d *decoder) distribution(key string, entry int, name string) bool {
	if op.Distribution(name).Valid() {
		return true
	}
	d.problem(key, entry, "unknown distribution %q: want normal, uniform or outliers", name)
	return false
}

// relations holds every combination of an entry's values to the op's own
// rules (ops.Op.Validate), whatever else is wrong with the entry, so a
// user sees every problem at once. A value at fault is reported once, at
// the first combination that breaks a rule, and the problems of one entry
// come in the order its values are written.
func (d *decoder) relations(table string, entry int, o ops.Op, axisValues [][]string) {
	spec := o.Spec()
	type valueAt struct {
		key string
		at  int // the index of the value in its axis's list; -1 for none
	}
	var faults []valueAt
	problems := map[valueAt]string{}
	product(spec.Axes, axisValues, func(p op.Params, at []int) {
		key, problem := o.Validate(p)
		if problem == "" {
			return
		}
		f := valueAt{key: key, at: -1}
		if i := slices.IndexFunc(spec.Axes, func(a op.Axis) bool { return a.Name == key }); i >= 0 {
			f.at = at[i]
		}
		if _, seen := problems[f]; !seen {
			problems[f] = problem
			faults = append(faults, f)
		}
	})
	slices.SortStableFunc(faults, func(a, b valueAt) int { return a.at - b.at })
	for _, f := range faults {
		d.problem(table+"."+f.key, entry, "%s", problems[f])
	}
}

// expand builds the cases of an entry whose values all passed: the
// product of its axes, each combination in every distribution.
func (d *decoder) expand(table string, entry int, o ops.Op, axisValues [][]string, dists []op.Distribution) []op.Case {
	spec := o.Spec()
	var out []op.Case
	product(spec.Axes, axisValues, func(p op.Params, _ []int) {
		for _, dist := range dists {
			params := ops.Complete(o, p.Clone())
			c := op.Case{ID: o.CaseID(params, dist), Op: spec.Name, Params: params, Distribution: dist}
			out = append(out, d.sized(table, entry, c))
		}
	})
	return out
}

// product calls visit with every combination of the axes' values, the
// first axis outermost, and the index of each value in its axis's list
// (-1 for none). An axis with no values (nil) takes the value of the axis
// it is the same as; an axis with an empty list (every value rejected, or
// a required axis left out) is absent from the params.
func product(axes []op.Axis, axisValues [][]string, visit func(p op.Params, at []int)) {
	p := op.Params{}
	at := make([]int, len(axes))
	var walk func(i int)
	walk = func(i int) {
		if i == len(axes) {
			visit(p, at)
			return
		}
		a, values := axes[i], axisValues[i]
		same, derived := p[a.SameAs]
		switch {
		case values == nil && derived:
			p[a.Name], at[i] = same, -1
			walk(i + 1)
		case len(values) == 0:
			delete(p, a.Name)
			at[i] = -1
			walk(i + 1)
		}
		for j, v := range values {
			p[a.Name], at[i] = v, j
			walk(i + 1)
		}
	}
	walk(0)
}
