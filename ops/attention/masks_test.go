package attention

import (
	"testing"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/mask"
	"github.com/flashcore/bench/sdk"
)

func params(kv ...string) op.Params {
	p := op.Params{"batch": "1", "heads": "8", "kv_heads": "2", "seq_q": "128", "seq_k": "512", "head_dim": "64",
		"dtype": "fp16", "causal": "true", "mode": "fwd"}
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i]] = kv[i+1]
	}
	return p
}

// TestMaskedIDsAndLabels: the masks set away from their defaults follow
// -causal in the ID and the label; a case that sets none keeps its ID.
func TestMaskedIDsAndLabels(t *testing.T) {
	for _, tc := range []struct {
		p            op.Params
		id, label    string
		masked       string
		facet, title string
	}{
		{params(), "b1-h8-kv2-s128-sk512-d64-fp16-causal", "B1 H8/2 S128x512 D64 fp16 causal", "",
			"d64-fp16-gqa4-causal", "D64 fp16, 4 query heads per KV head, causal"},
		{params("causal_align", "bottom-right"), "b1-h8-kv2-s128-sk512-d64-fp16-causal-br",
			"B1 H8/2 S128x512 D64 fp16 causal bottom-right", "causal_align",
			"d64-fp16-gqa4-causal-br", "D64 fp16, 4 query heads per KV head, causal, bottom-right"},
		{params("causal_align", "bottom-right", "window_left", "64", "softcap", "30"),
			"b1-h8-kv2-s128-sk512-d64-fp16-causal-br-w64-cap30",
			"B1 H8/2 S128x512 D64 fp16 causal bottom-right window64 softcap30", "causal_align",
			"d64-fp16-gqa4-causal-br-w64-cap30", "D64 fp16, 4 query heads per KV head, causal, bottom-right window64 softcap30"},
		{params("causal", "false", "window_left", "16", "window_right", "16"), "b1-h8-kv2-s128-sk512-d64-fp16-w16_16",
			"B1 H8/2 S128x512 D64 fp16 window16,16", "window_left",
			"d64-fp16-gqa4-w16_16", "D64 fp16, 4 query heads per KV head, window16,16"},
	} {
		if got := CaseIDOf(tc.p, op.Normal); got != tc.id {
			t.Errorf("CaseIDOf(%v) = %q, want %q", tc.p, got, tc.id)
		}
		if got := LabelOf(tc.p); got != tc.label {
			t.Errorf("LabelOf(%v) = %q, want %q", tc.p, got, tc.label)
		}
		if got := MaskedAxis(tc.p); got != tc.masked {
			t.Errorf("MaskedAxis(%v) = %q, want %q", tc.p, got, tc.masked)
		}
		if f := Facet(tc.p); f.Name != tc.facet || f.Title != tc.title {
			t.Errorf("Facet(%v) = %q %q, want %q %q", tc.p, f.Name, f.Title, tc.facet, tc.title)
		}
	}
	// Params from a shape name no mask: the ID is CaseID's.
	s := ShapeFrom(params())
	if got, want := CaseIDOf(ParamsOf(s), op.Outliers), CaseID(s, op.Outliers); got != want {
		t.Errorf("CaseIDOf of a shape's params %q, CaseID %q", got, want)
	}
}

// TestMaskedPairsCountedExactly compares the pairs FLOPs counts under
// every mask with a brute-force count of the (i, j) pairs the mask
// admits, written from the definitions rather than mask.Keys.
func TestMaskedPairsCountedExactly(t *testing.T) {
	for _, sizes := range [][2]int{{5, 5}, {3, 11}, {11, 3}, {64, 100}} {
		sq, sk := sizes[0], sizes[1]
		for _, topLeft := range []bool{true, false} {
			for _, causal := range []bool{false, true} {
				for _, w := range [][2]int{{-1, -1}, {2, -1}, {0, 0}, {4, 1}, {-1, 3}} {
					m := mask.Mask{Causal: causal, TopLeft: topLeft, Left: w[0], Right: w[1], Softcap: 5}
					var want int64
					for i := range sq {
						p := i
						if !topLeft {
							p = sk - sq + i
						}
						for j := range sk {
							seen := (!causal || j <= p) && (w[0] < 0 || j >= p-w[0]) && (w[1] < 0 || j <= p+w[1])
							if seen {
								want++
							}
						}
					}
					if got := unmaskedPairs(shape(1, 1, 1, sq, sk, 1, causal, sdk.FP16), m); got != want {
						t.Errorf("Sq %d Sk %d %+v: %d pairs, want %d", sq, sk, m, got, want)
					}
				}
			}
		}
	}
}
