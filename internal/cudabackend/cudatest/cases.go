package cudatest

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/flashcore/bench/sdk"
)

// Case is one shape run with one set of tunables.
type Case struct {
	Shape    sdk.Shape
	Tunables map[string]string
}

// Name is the shape and the tunables, e.g. "B2 H4-kv2 S77x131 D128 fp16
// [tile_n=32]". The "/" of grouped heads becomes "-kv", so that the name
// is one element of a go test -run pattern.
func (c Case) Name() string {
	name := strings.ReplaceAll(c.Shape.String(), "/", "-kv")
	if len(c.Tunables) == 0 {
		return name
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c.Tunables)) {
		parts = append(parts, k+"="+c.Tunables[k])
	}
	return fmt.Sprintf("%s [%s]", name, strings.Join(parts, ","))
}

func shape(b, h, hkv, sq, sk, d int, causal bool, dtype sdk.DType) sdk.Shape {
	return sdk.Shape{Batch: b, Heads: h, KVHeads: hkv, SeqQ: sq, SeqK: sk, HeadDim: d, Causal: causal, DType: dtype}
}

// Shapes are the edge cases, for one dtype.
func Shapes(dtype sdk.DType) []sdk.Shape {
	return []sdk.Shape{
		shape(1, 2, 2, 64, 64, 64, false, dtype),   // tile multiples
		shape(2, 4, 2, 77, 131, 128, true, dtype),  // odd lengths, Sq < Sk, GQA, causal
		shape(1, 2, 2, 100, 37, 64, true, dtype),   // Sq > Sk causal: late rows see every key
		shape(1, 3, 1, 1, 200, 128, false, dtype),  // one query row, 3:1 GQA
		shape(1, 2, 1, 257, 257, 64, true, dtype),  // crosses 48/64/128-row tiles
		shape(2, 2, 2, 95, 33, 128, false, dtype),  // Sq > Sk without masking
		shape(1, 1, 1, 300, 300, 128, true, dtype), // many key tiles, long causal rescaling chains
	}
}

// Combinations returns every combination of the tunables' values.
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

// StandardCases are every shape of Shapes in fp16 and bf16 with the default
// tunables, plus, for every other tunable combination, the shapes of fp16
// and the GQA causal shape in bf16.
func StandardCases(tunables []sdk.Tunable) []Case {
	var cases []Case
	for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16} {
		for _, s := range Shapes(dtype) {
			cases = append(cases, Case{Shape: s})
		}
	}
	for _, combo := range Combinations(tunables) {
		if isDefault(tunables, combo) {
			continue
		}
		for _, s := range Shapes(sdk.FP16) {
			cases = append(cases, Case{Shape: s, Tunables: combo})
		}
		cases = append(cases, Case{Shape: Shapes(sdk.BF16)[1], Tunables: combo})
	}
	return cases
}

func isDefault(tunables []sdk.Tunable, combo map[string]string) bool {
	for _, t := range tunables {
		if combo[t.Name] != t.Default {
			return false
		}
	}
	return true
}
