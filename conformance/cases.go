package conformance

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// Case is one conformance case: a suite case (its ID keys the inputs, as in
// flashcore run) run with one set of tunables.
type Case struct {
	op.Case
	// Tunables are the values sent with Prepare; nil for the defaults.
	Tunables map[string]string
}

// Name is the case ID followed by the tunables, e.g.
// "b2-h4-kv2-s77-sk131-d128-fp16-causal tile_n=64 kv_stages=1": one element
// of a go test -run pattern (go test turns the spaces into underscores).
func (c Case) Name() string {
	if len(c.Tunables) == 0 {
		return c.ID
	}
	parts := []string{c.ID}
	for _, k := range slices.Sorted(maps.Keys(c.Tunables)) {
		parts = append(parts, k+"="+c.Tunables[k])
	}
	return strings.Join(parts, " ")
}

// edge is a shape a kernel can get wrong, before it is fitted into a
// variant's capabilities.
type edge struct {
	why                               string
	batch, heads, kvHeads, seqQ, seqK int
	causal                            bool
}

// edges are the shapes every variant is checked on, each pulled inside the
// variant's declared capabilities by fit: a variant without GQA gets the
// same lengths with one key/value head per query head, and so on.
var edges = []edge{
	{"tile multiples", 1, 2, 2, 64, 64, false},
	{"odd lengths, causal", 2, 2, 2, 77, 77, true},
	{"odd lengths, Sq < Sk, GQA, causal", 2, 4, 2, 77, 131, true},
	{"Sq > Sk causal: late rows see every key", 1, 2, 2, 100, 37, true},
	{"one query row, 3:1 GQA", 1, 3, 1, 1, 200, false},
	{"crosses 48-, 64- and 128-row tiles", 1, 2, 1, 257, 257, true},
	{"Sq > Sk without masking", 2, 2, 2, 95, 33, false},
	{"many key tiles, long causal rescaling chains", 1, 1, 1, 300, 300, true},
}

// anyHeadDims are the head dims checked when a variant declares any.
var anyHeadDims = []int{64, 128}

// Cases are the cases a variant is checked on, all inside its declared
// capabilities, most telling first (so that Options.MaxCasesPerVariant
// keeps the best ones):
//
//  1. every declared dtype at every declared head dim, on the first edge;
//  2. each backward mode the variant declares (bwd, fwd+bwd) on the GQA
//     causal edge in the first dtype;
//  3. every edge in the first dtype, head dims taken in turn;
//  4. every edge in each other dtype;
//  5. in each backward mode declared, every edge in the first dtype and
//     the GQA causal edge in each other dtype;
//  6. for each combination of tunables other than the defaults, every edge
//     in the first dtype and the GQA causal edge in each other dtype and
//     in each backward mode declared. A
//     space of more than MaxCombinations combinations (a search space for
//     flashcore tune) is covered one value at a time instead: every value
//     of each tunable with the others at their defaults.
//
// Steps 1, 3, 4 and 6 are forward cases, which a variant that does not run
// forward (sdk.Capabilities.Modes) does not get. Edges that cannot be
// fitted (a length or element limit too small) are left out; duplicates
// after fitting are dropped.
func Cases(v sdk.Variant) []Case {
	caps := v.CapabilitiesOf("attention")
	if len(caps.DTypes) == 0 {
		return nil
	}
	headDims := caps.HeadDims
	if len(headDims) == 0 {
		headDims = anyHeadDims
	}
	var cases []Case
	seen := map[string]bool{}
	backward := backwardModes(caps)
	add := func(e edge, mode sdk.Mode, dtype sdk.DType, headDim int, tunables map[string]string) {
		s, ok := fit(e, caps, mode, dtype, headDim)
		if !ok {
			return
		}
		c := Case{Case: attention.NewCase(s, op.Normal), Tunables: tunables}
		if !seen[c.Name()] {
			seen[c.Name()] = true
			cases = append(cases, c)
		}
	}
	for _, dtype := range caps.DTypes {
		for _, d := range headDims {
			add(edges[0], sdk.Forward, dtype, d, nil)
		}
	}
	for _, mode := range backward {
		add(edges[gqaEdge], mode, caps.DTypes[0], headDims[0], nil)
	}
	for _, dtype := range caps.DTypes {
		for i, e := range edges {
			add(e, sdk.Forward, dtype, headDims[i%len(headDims)], nil)
		}
	}
	for _, mode := range backward {
		for i, e := range edges {
			add(e, mode, caps.DTypes[0], headDims[i%len(headDims)], nil)
		}
		for _, dtype := range caps.DTypes[1:] {
			add(edges[gqaEdge], mode, dtype, headDims[0], nil)
		}
	}
	tunables := TunablesOf(v.Tunables, "attention")
	for _, combo := range coveringCombinations(tunables) {
		if isDefault(tunables, combo) {
			continue
		}
		for i, e := range edges {
			add(e, sdk.Forward, caps.DTypes[0], headDims[i%len(headDims)], combo)
		}
		for _, dtype := range caps.DTypes[1:] {
			add(edges[gqaEdge], sdk.Forward, dtype, headDims[0], combo)
		}
		for _, mode := range backward {
			add(edges[gqaEdge], mode, caps.DTypes[0], headDims[0], combo)
		}
	}
	return cases
}

// PinnedCases are Cases of v with the tunables in pin held at its values:
// each is a tunable of v's attention with a single value, so the rest are
// swept (every combination where they are MaxCombinations or fewer), and
// every case names the pin's values, the defaults' cases included.
func PinnedCases(v sdk.Variant, pin map[string]string) ([]Case, error) {
	pinned, err := pinVariant(v, pin)
	if err != nil {
		return nil, err
	}
	cases := Cases(pinned)
	for i, c := range cases {
		tunables := maps.Clone(pin)
		maps.Copy(tunables, c.Tunables)
		cases[i].Tunables = tunables
	}
	return cases, nil
}

// pinVariant is v with each tunable in pin held at its value (its only one).
func pinVariant(v sdk.Variant, pin map[string]string) (sdk.Variant, error) {
	pinned := v
	pinned.Tunables = slices.Clone(v.Tunables)
	for _, name := range slices.Sorted(maps.Keys(pin)) {
		i := slices.IndexFunc(pinned.Tunables, func(t sdk.Tunable) bool { return t.Name == name && t.AppliesTo("attention") })
		if i < 0 {
			return v, fmt.Errorf("pin %s=%s: variant %s has no attention tunable %s", name, pin[name], v.Name, name)
		}
		t := pinned.Tunables[i]
		if !slices.Contains(t.Values, pin[name]) {
			return v, fmt.Errorf("pin %s=%s: not among the tunable's values %v", name, pin[name], t.Values)
		}
		t.Values, t.Default = []string{pin[name]}, pin[name]
		pinned.Tunables[i] = t
	}
	return pinned, nil
}

// ShapeCases are a backend's own shapes (Options.Shapes) as cases of v with
// pin's tunables held (nil: none), each shape with every combination of the
// other tunables that Cases sweeps (coveringCombinations), the defaults'
// included; each case names its tunables. A shape outside v's declared
// capabilities is an error: the backend named a case it does not run.
func ShapeCases(v sdk.Variant, pin map[string]string, shapes []sdk.Shape) ([]Case, error) {
	if len(shapes) == 0 {
		return nil, nil
	}
	pinned, err := pinVariant(v, pin)
	if err != nil {
		return nil, err
	}
	caps := pinned.CapabilitiesOf("attention")
	tunables := TunablesOf(pinned.Tunables, "attention")
	combos := coveringCombinations(tunables)
	if !slices.ContainsFunc(combos, func(c map[string]string) bool { return isDefault(tunables, c) }) {
		combos = append([]map[string]string{defaultsOf(tunables)}, combos...)
	}
	var cases []Case
	for _, s := range shapes {
		if why := caps.Unsupported(s); why != "" {
			return nil, fmt.Errorf("shape %s of the backend's own: outside %s's capabilities: %s", attention.NewCase(s, op.Normal).ID, v.Name, why)
		}
		for _, combo := range combos {
			values := maps.Clone(pin)
			if values == nil {
				values = map[string]string{}
			}
			maps.Copy(values, combo)
			cases = append(cases, Case{Case: attention.NewCase(s, op.Normal), Tunables: values})
		}
	}
	return cases, nil
}

// gqaEdge is the index in edges of the odd-length GQA causal edge, the one
// most kernels get wrong, which every dtype, backward mode and tunable
// combination is checked on.
const gqaEdge = 2

// backwardModes are the modes other than forward that caps declare, in
// the order of sdk.Modes.
func backwardModes(caps sdk.Capabilities) []sdk.Mode {
	var out []sdk.Mode
	for _, m := range sdk.Modes {
		if m != sdk.Forward && caps.RunsMode(m) {
			out = append(out, m)
		}
	}
	return out
}

// fit pulls an edge, run in mode, inside caps: the masking it lacks is swapped for the
// other, grouped heads become one key/value head per query head, unequal
// lengths become equal, lengths are rounded up to SeqMultiple (so an odd
// length becomes the next whole tile: the edge keeps its other traits),
// lengths are clipped to MaxSeqLen, and batch and
// heads shrink under MaxElements. It reports false when the result still
// falls outside caps.
func fit(e edge, caps sdk.Capabilities, mode sdk.Mode, dtype sdk.DType, headDim int) (sdk.Shape, bool) {
	if mode == sdk.Forward {
		mode = "" // a forward shape names no mode (attention.ShapeFrom)
	}
	s := sdk.Shape{Batch: e.batch, Heads: e.heads, KVHeads: e.kvHeads, SeqQ: e.seqQ, SeqK: e.seqK,
		HeadDim: headDim, DType: dtype, Causal: e.causal, Mode: mode}
	if s.Causal && !caps.Causal || !s.Causal && !caps.NonCausal {
		s.Causal = !s.Causal
	}
	if !caps.GroupedQueryHeads {
		s.KVHeads = s.Heads
	}
	if !caps.UnequalSeqLens {
		s.SeqK = s.SeqQ
	}
	if m := caps.SeqMultiple; m > 1 {
		s.SeqQ, s.SeqK = roundUp(s.SeqQ, m), roundUp(s.SeqK, m)
	}
	if caps.MaxSeqLen > 0 {
		s.SeqQ, s.SeqK = min(s.SeqQ, caps.MaxSeqLen), min(s.SeqK, caps.MaxSeqLen)
	}
	over := func() bool { return caps.MaxElements > 0 && max(s.QElements(), s.KVElements()) > caps.MaxElements }
	if over() {
		s.Batch = 1
	}
	if over() && s.KVHeads != s.Heads {
		s.Heads, s.KVHeads = 2, 1
	}
	if over() && s.KVHeads == s.Heads {
		s.Heads, s.KVHeads = 1, 1
	}
	return s, caps.Unsupported(s) == ""
}

// MaxCombinations is the largest tunable space whose every combination is
// checked; larger spaces are checked one value at a time.
const MaxCombinations = 32

// coveringCombinations is every combination of a small space, and every
// value of each tunable with the others at their defaults in a large one,
// so each value is run at least once either way.
func coveringCombinations(tunables []sdk.Tunable) []map[string]string {
	size := 1
	for _, t := range tunables {
		size *= len(t.Values)
	}
	if size <= MaxCombinations {
		return Combinations(tunables)
	}
	defaults := defaultsOf(tunables)
	var out []map[string]string
	for _, t := range tunables {
		for _, v := range t.Values {
			if v == t.Default {
				continue
			}
			m := maps.Clone(defaults)
			m[t.Name] = v
			out = append(out, m)
		}
	}
	return out
}

// TunablesOf are the tunables that apply to the op of that name
// (sdk.Tunable.Ops): those a case of the op is swept over. A case of
// another op's tunable would be refused (sdk.ResolveTunables).
func TunablesOf(tunables []sdk.Tunable, op string) []sdk.Tunable {
	var out []sdk.Tunable
	for _, t := range tunables {
		if t.AppliesTo(op) {
			out = append(out, t)
		}
	}
	return out
}

// Combinations returns every combination of the tunables' values, the
// first being the first value of each.
func Combinations(tunables []sdk.Tunable) []map[string]string {
	combos := []map[string]string{{}}
	for _, t := range tunables {
		var next []map[string]string
		for _, c := range combos {
			for _, v := range t.Values {
				m := maps.Clone(c)
				m[t.Name] = v
				next = append(next, m)
			}
		}
		combos = next
	}
	return combos
}

// defaultsOf is the combination of tunables at their defaults.
func defaultsOf(tunables []sdk.Tunable) map[string]string {
	defaults := map[string]string{}
	for _, t := range tunables {
		defaults[t.Name] = t.Default
	}
	return defaults
}

func isDefault(tunables []sdk.Tunable, combo map[string]string) bool {
	for _, t := range tunables {
		if combo[t.Name] != t.Default {
			return false
		}
	}
	return true
}

// roundUp is n rounded up to a multiple of m.
func roundUp(n, m int) int { return (n + m - 1) / m * m }
