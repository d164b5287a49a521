package suite

import (
	"slices"
	"strings"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
)

// opEntry validates and expands a [[sweeps]] or [[cases]] entry whose op
// is not attention. Its keys are the op's axes (op.Spec), plus op and
// distribution. In a sweep each key lists values and the cases are their
// product, the last axis innermost, the distribution after it; in a case
// each key holds one value. An axis left out takes its default, or the
// value of the axis it is the same as.
func (d *decoder) opEntry(table string, entry int, values map[string]any, sweep bool) []op.Case {
	name, _ := values["op"].(string) // decodeOpEntries read it as a string
	o, err := ops.Lookup(name)
	if err != nil {
		d.problem(table+".op", entry, "%s", err.Error())
		return nil
	}
	spec := o.Spec()
	before := len(d.problems)
	d.unknownAxes(table, entry, spec, values)
	axisValues := make([][]string, len(spec.Axes))
	for i, a := range spec.Axes {
		key := table + "." + a.Name
		raw, set := values[a.Name]
		switch {
		case set:
			axisValues[i] = d.axisValues(key, entry, a, raw, sweep)
		case a.Required():
			d.problem(key, entry, "required")
		case a.SameAs == "":
			axisValues[i] = []string{a.Default}
		}
	}
	dists := d.distributions(table+".distribution", entry, values["distribution"], sweep)
	if len(d.problems) > before {
		return nil
	}
	return d.expand(table, entry, o, axisValues, dists)
}

// unknownAxes reports every key the op has no axis for, in file order.
func (d *decoder) unknownAxes(table string, entry int, spec op.Spec, values map[string]any) {
	var unknown []string
	for key := range values {
		if _, ok := spec.Axis(key); !ok && key != "op" && key != "distribution" {
			unknown = append(unknown, key)
		}
	}
	slices.SortFunc(unknown, func(a, b string) int {
		return d.lines.Find(table+"."+a, entry) - d.lines.Find(table+"."+b, entry)
	})
	names := make([]string, len(spec.Axes))
	for i, a := range spec.Axes {
		names[i] = a.Name
	}
	for _, key := range unknown {
		d.problem(table+"."+key, entry, "unknown key: an entry of op %s takes %s, op and distribution",
			spec.Name, strings.Join(names, ", "))
	}
}

// axisValues checks the values of one axis: a non-empty array in a sweep,
// one value in a case.
func (d *decoder) axisValues(key string, entry int, a op.Axis, raw any, sweep bool) []string {
	list := []any{raw}
	if sweep {
		var ok bool
		if list, ok = raw.([]any); !ok {
			d.problem(key, entry, "want an array of values, such as [%s]", exampleOf(a))
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

func exampleOf(a op.Axis) string {
	switch a.Kind {
	case op.Bool:
		return "false, true"
	case op.Elem:
		return `"fp16", "bf16"`
	}
	return "1024, 4096"
}

// distributions checks the distribution key of an op entry.
func (d *decoder) distributions(key string, entry int, raw any, sweep bool) []op.Distribution {
	if raw == nil {
		return []op.Distribution{op.Normal}
	}
	list := []any{raw}
	if sweep {
		var ok bool
		if list, ok = raw.([]any); !ok || len(list) == 0 {
			d.problem(key, entry, "must list at least one value")
			return nil
		}
	}
	var out []op.Distribution
	for _, v := range list {
		name, _ := v.(string)
		if d.distribution(key, entry, name) {
			out = append(out, op.Distribution(name))
		}
	}
	return out
}

// expand builds the cases of an entry as the product of its axes, checking
// each with the op's own rules.
func (d *decoder) expand(table string, entry int, o ops.Op, axisValues [][]string, dists []op.Distribution) []op.Case {
	spec := o.Spec()
	reported := map[string]bool{}
	var out []op.Case
	var walk func(i int, p op.Params)
	walk = func(i int, p op.Params) {
		if i == len(spec.Axes) {
			if key, problem := o.Validate(p); problem != "" {
				if !reported[key+problem] {
					reported[key+problem] = true
					d.problem(table+"."+key, entry, "%s", problem)
				}
				return
			}
			for _, dist := range dists {
				c := op.Case{ID: o.CaseID(p, dist), Op: spec.Name, Params: p.Clone(), Distribution: dist}
				out = append(out, d.sized(table, entry, c))
			}
			return
		}
		a := spec.Axes[i]
		values := axisValues[i]
		if values == nil {
			values = []string{p[a.SameAs]}
		}
		for _, v := range values {
			p[a.Name] = v
			walk(i+1, p)
		}
	}
	walk(0, op.Params{})
	return out
}
