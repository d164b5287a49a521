package cudafile

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// An op table serves an op other than attention (package ops: decode,
// varlen, ...) with kernels of the same source: a top-level table named
// after the op, with its capabilities, scratch and kernels.
//
//	[decode]
//	capabilities = { dtypes = ["fp16"], head_dims = [128], masks = ["window"] }
//	[[decode.kernels]]
//	entry = "my_decode_d{head_dim}"
//	grid = ["batch * heads"]
//	block = [128]
//	params = ["q", "k_cache", "v_cache", "block_table", "cache_seqlens", "o", "q_len", "scale"]
//
// Its formulas use the op's axes by name: the integer axes (derived ones
// too), the window axes, the bool axes as 0 or 1, elem (the dtype's size in
// bytes) and the tunables. Its params may also name the op's tensors
// (pointers to their device buffers), its float axes (softcap) and, where
// the op has a head_dim axis, scale (1/sqrt(head_dim)) and scale_log2e.

// OpTable is one op table of a spec, validated.
type OpTable struct {
	Op           string // the op's name, the table's
	Capabilities sdk.Capabilities
	Pass
	spec op.Spec
}

// opFile is the schema of an op table.
type opFile struct {
	Capabilities capabilitiesTable `toml:"capabilities"`
	Scratch      []scratchTable    `toml:"scratch"`
	Kernels      []kernelTable     `toml:"kernels"`
}

// opTable is an op table as decoded, before validation.
type opTable struct {
	name string
	spec op.Spec
	file opFile
}

// specKeys are the top-level keys of a spec other than op tables.
var specKeys = []string{"description", "source", "binary", "compiler_options", "output_reset",
	"capabilities", "tunables", "scratch", "kernels", "backward"}

func isSpecKey(key string) bool { return slices.Contains(specKeys, key) }

// opTables decodes the top-level tables of data that are not spec keys:
// each must be named after an op other than attention.
func (v *validator) opTables(data []byte) []opTable {
	var top map[string]toml.Primitive
	md, err := toml.Decode(string(data), &top)
	if err != nil {
		return nil // the spec's own decoding reported it
	}
	var others []string // the ops a table may name
	for _, name := range ops.Names() {
		if name != attention.Name {
			others = append(others, name)
		}
	}
	var out []opTable
	for _, name := range slices.Sorted(maps.Keys(top)) {
		if isSpecKey(name) {
			continue
		}
		if md.Type(name) != "Hash" {
			v.problem(name, -1, "unknown key")
			continue
		}
		if name == attention.Name {
			v.problem(name, -1, "attention's kernels are the top-level [capabilities], [[kernels]] and [backward], not an op table")
			continue
		}
		o, err := ops.Lookup(name)
		if err != nil {
			v.problem(name, -1, "unknown key: not a spec key, nor an op whose table this could be (%s)", strings.Join(others, ", "))
			continue
		}
		t := opTable{name: name, spec: o.Spec()}
		if err := md.PrimitiveDecode(top[name], &t.file); err != nil {
			v.problem(name, -1, "%v", err)
			continue
		}
		out = append(out, t)
	}
	for _, k := range md.Undecoded() {
		if len(k) > 1 && slices.ContainsFunc(out, func(t opTable) bool { return t.name == k[0] }) {
			v.problem(k.String(), -1, "unknown key")
		}
	}
	return out
}

// ops validates the op tables, their names and the tunables' against
// each op's.
func (v *validator) ops(tables []opTable, s *Spec) []OpTable {
	var out []OpTable
	saved := v.known
	defer func() { v.known, v.scope = saved, nil }()
	for _, t := range tables {
		sc := newOpScope(t.spec)
		v.scope = sc
		for i, tu := range s.Tunables {
			if sc.taken(tu.Name) {
				v.problem("tunables.name", i, "%q is taken: %s has an axis or tensor of that name", tu.Name, t.name)
			}
		}
		table := OpTable{Op: t.name, spec: t.spec}
		table.Capabilities = v.capabilities(t.name+".capabilities", t.file.Capabilities)
		table.Capabilities.Masks = v.masks(t.name+".capabilities.masks", t.file.Capabilities.Masks, t.spec)
		v.known = sc.formulaNames(s.Tunables)
		table.Scratch = v.scratch(t.name+".scratch", t.file.Scratch, sc.tensors)
		for _, buf := range table.Scratch {
			v.known[buf.Name] = false
		}
		table.Kernels = v.kernels(t.name+".kernels", t.file.Kernels, s, sc.tensors)
		out = append(out, table)
	}
	return out
}

// masks checks an op table's masks: each one the op has the axes of.
func (v *validator) masks(key string, masks []string, spec op.Spec) []string {
	axis := map[string]string{sdk.MaskWindow: "window_left", sdk.MaskSoftcap: "softcap"}
	for _, m := range masks {
		a, known := axis[m]
		switch _, has := spec.Axis(a); {
		case !known:
			v.problem(key, -1, "%q is not a mask (window, softcap)", m)
		case !has:
			v.problem(key, -1, "%s has no %s: it takes no %s mask", spec.Name, a, m)
		}
	}
	return masks
}

// opScope is what an op table's formulas, params and entries may name.
type opScope struct {
	spec    op.Spec
	ints    []string // Int and Window axes
	bools   []string // Bool axes: 0 or 1 in formulas
	floats  []string // Float axes, and scale and scale_log2e with a head_dim
	tensors []string // inputs and outputs
	elem    string   // the Elem axis "dtype", or ""
}

func newOpScope(spec op.Spec) *opScope {
	sc := &opScope{spec: spec}
	for _, a := range spec.Axes {
		switch a.Kind {
		case op.Int, op.Window:
			sc.ints = append(sc.ints, a.Name)
		case op.Bool:
			sc.bools = append(sc.bools, a.Name)
		case op.Float:
			sc.floats = append(sc.floats, a.Name)
		case op.Elem:
			if a.Name == "dtype" {
				sc.elem = a.Name
			}
		}
	}
	if _, ok := spec.Axis("head_dim"); ok {
		sc.floats = append(sc.floats, floatParams...)
	}
	for _, t := range slices.Concat(spec.Inputs, spec.Outputs) {
		sc.tensors = append(sc.tensors, t.Name)
	}
	return sc
}

// taken says whether a tunable or scratch buffer may not have the name.
func (sc *opScope) taken(name string) bool {
	_, axis := sc.spec.Axis(name)
	return axis || name == "elem" || slices.Contains(sc.tensors, name) || slices.Contains(sc.floats, name)
}

// formulaNames are the names formulas of the op may use.
func (sc *opScope) formulaNames(tunables []sdk.Tunable) map[string]bool {
	known := map[string]bool{}
	for _, n := range slices.Concat(sc.ints, sc.bools) {
		known[n] = true
	}
	if sc.elem != "" {
		known["elem"] = true
	}
	for _, t := range tunables {
		known[t.Name] = true
	}
	return known
}

// placeholderKnown says whether name may be an entry's placeholder.
func (sc *opScope) placeholderKnown(name string, tunables []sdk.Tunable) bool {
	return sc.elem != "" && (name == "dtype" || name == "T") || slices.Contains(sc.ints, name) ||
		slices.Contains(sc.bools, name) || slices.ContainsFunc(tunables, func(t sdk.Tunable) bool { return t.Name == name })
}

// entry checks an op kernel's entry: a symbol (not a template-id: its
// instances are attention's alone) whose placeholders the op fills in.
func (sc *opScope) entry(v *validator, key string, i int, entry string, instances map[string][]int64, s *Spec) {
	for _, name := range entryNames(entry) {
		if !sc.placeholderKnown(name, s.Tunables) {
			v.problem(key+".entry", i, "{%s} is not an axis of %s (%s) or a tunable", name, sc.spec.Name, strings.Join(slices.Concat(sc.ints, sc.bools), ", "))
		}
	}
	if isTemplate(entry) {
		v.problem(key+".entry", i, "template entries are for attention's kernels; name an extern \"C\" symbol, with placeholders such as {head_dim}")
	}
	if len(instances) > 0 {
		v.problem(key+".instances", i, "instances are for attention's template entries")
	}
}

// opVars are the values of an op case's formula names, with the
// tunables', and of its float params.
func (t OpTable) vars(c cudakit.OpCase, tunables map[string]string) (map[string]int64, map[string]float64, error) {
	sc := newOpScope(t.spec)
	vars := map[string]int64{}
	for _, name := range sc.ints {
		// An axis left out is its default, or the axis it is the same as
		// (kv_heads, heads): the suite decoder fills both in, a plan
		// called directly may not.
		a, _ := t.spec.Axis(name)
		s := c.Params[name]
		for seen := 0; s == "" && seen < 4; seen++ {
			if a.Default != "" {
				s = a.Default
			} else if a.SameAs != "" {
				s = c.Params[a.SameAs]
				a, _ = t.spec.Axis(a.SameAs)
			} else {
				break
			}
		}
		if s == "" {
			continue // a formula that uses it says it has no value
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("axis %s: %q is not an integer", name, s)
		}
		vars[name] = n
	}
	for _, name := range sc.bools {
		if t.boolAxis(c, name) {
			vars[name] = 1
		} else {
			vars[name] = 0
		}
	}
	if sc.elem != "" {
		vars["elem"] = int64(c.Params.DType(sc.elem).Size())
	}
	for name, value := range tunables {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("tunable %s: %q is not an integer", name, value)
		}
		vars[name] = n
	}
	floats := map[string]float64{}
	for _, name := range sc.floats {
		if s, ok := c.Params[name]; ok && s != "" {
			x, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(x) {
				return nil, nil, fmt.Errorf("axis %s: %q is not a number", name, s)
			}
			floats[name] = x
		} else if _, axis := t.spec.Axis(name); axis {
			floats[name] = 0 // a float axis left out is 0: softcap's none
		}
	}
	if d, ok := vars["head_dim"]; ok && d > 0 {
		scale := 1 / math.Sqrt(float64(d))
		if s, ok := c.Params["scale"]; ok && s != "" {
			x, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(x) {
				return nil, nil, fmt.Errorf("param scale: %q is not a number", s)
			}
			scale = x
		}
		floats["scale"], floats["scale_log2e"] = scale, scale*math.Log2E
	}
	return vars, floats, nil
}

// boolAxis is a bool axis of the case, its default where the case
// leaves it out.
func (t OpTable) boolAxis(c cudakit.OpCase, name string) bool {
	if s, ok := c.Params[name]; ok && s != "" {
		return s == "true"
	}
	a, _ := t.spec.Axis(name)
	return a.Default == "true"
}

// render fills an op entry's placeholders in: {dtype} as fp16, bf16 or
// fp32, {T} as the C++ element type, a bool axis as true or false, every
// other name as its decimal integer.
func (t OpTable) render(entry string, c cudakit.OpCase, vars map[string]int64) string {
	sc := newOpScope(t.spec)
	return placeholders.ReplaceAllStringFunc(entry, func(m string) string {
		name := m[1 : len(m)-1]
		switch {
		case name == "dtype":
			return c.Params[sc.elem]
		case name == "T":
			return cTypes[c.Params.DType(sc.elem)]
		case slices.Contains(sc.bools, name):
			return strconv.FormatBool(t.boolAxis(c, name))
		}
		return strconv.FormatInt(vars[name], 10)
	})
}

// OpPlan maps a case of the op table's op to its launches, as Plan does
// attention's forward. Its errors are invalid plans that name the spec and
// the table.
func (s *Spec) OpPlan(t OpTable) cudakit.OpPlan {
	return func(c cudakit.OpCase, tunables map[string]string) (cudakit.Launch, error) {
		l, err := t.plan(c, tunables)
		if err != nil {
			return cudakit.Launch{}, fmt.Errorf("%w: %s: [%s]: %w", cudakit.ErrInvalidPlan, s.Path, t.Op, err)
		}
		return l, nil
	}
}

// OpPlans are the plans of every op table, by op name; nil without any.
func (s *Spec) OpPlans() map[string]cudakit.OpPlan {
	if len(s.Ops) == 0 {
		return nil
	}
	out := map[string]cudakit.OpPlan{}
	for _, t := range s.Ops {
		out[t.Op] = s.OpPlan(t)
	}
	return out
}

func (t OpTable) plan(c cudakit.OpCase, tunables map[string]string) (cudakit.Launch, error) {
	if c.Op != "" && c.Op != t.Op {
		return cudakit.Launch{}, errors.New("a case of op " + c.Op)
	}
	vars, floats, err := t.vars(c, tunables)
	if err != nil {
		return cudakit.Launch{}, err
	}
	return t.Pass.plan(nil, vars, floats, func(entry string) string { return t.render(entry, c, vars) })
}
