package inputs

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

var update = flag.Bool("update", false, "rewrite the test vectors in docs/inputs.md")

// The test vectors live in docs/inputs.md, between these markers, so the
// page a re-implementer reads is the page this test checks.
const (
	docPath     = "../../docs/inputs.md"
	vectorBegin = "<!-- test vectors: begin (go test ./core/inputs -update rewrites) -->\n"
	vectorEnd   = "<!-- test vectors: end -->\n"
)

// vectorSeed is the seed of the shipped suites.
const vectorSeed = 20251022

func vectorCases() []op.Case {
	return []op.Case{
		attention.NewCase(sdk.Shape{Batch: 1, Heads: 2, KVHeads: 2, SeqQ: 128, SeqK: 128, HeadDim: 64, DType: sdk.FP16}, op.Normal),
		attention.NewCase(sdk.Shape{Batch: 1, Heads: 4, KVHeads: 2, SeqQ: 96, SeqK: 160, HeadDim: 64, DType: sdk.BF16, Causal: true}, op.Uniform),
		attention.NewCase(sdk.Shape{Batch: 1, Heads: 8, KVHeads: 2, SeqQ: 300, SeqK: 500, HeadDim: 64, DType: sdk.FP32, Causal: true}, op.Outliers),
	}
}

// vectorText writes the test vectors: intermediate values of the key
// derivation, the first words, values and stored bits, the first outliers,
// and the hash of whole tensors.
func vectorText() string {
	var b strings.Builder
	b.WriteString("```text\n")
	for i, c := range vectorCases() {
		if i > 0 {
			b.WriteString("\n")
		}
		dtype := attention.ShapeOf(c).DType
		fmt.Fprintf(&b, "seed %d, case %q (%s, %s)\n", vectorSeed, c.ID, c.Distribution, dtype)
		writeRow(&b, "fnv1a64(ID)", 1, func(int) string { return fmt.Sprintf("%#016x", fnv1a(c.ID)) })
		for ti, name := range []string{"Q", "K", "V"} {
			s := NewStream(vectorSeed, c.ID, Tensor(ti))
			writeRow(&b, "key_"+name, 1, func(int) string { return fmt.Sprintf("%#016x", s.Key()) })
		}
		q := NewStream(vectorSeed, c.ID, TensorQ)
		writeRow(&b, "Q word n=0..3", 4, func(n int) string { return fmt.Sprintf("%#016x", q.Word(n)) })
		writeRow(&b, "Q value n=0..3", 4, func(n int) string { return fmt.Sprintf("%.17g", q.Value(c.Distribution, n)) })
		writeRow(&b, "Q stored n=0..3", 4, func(n int) string { return storedBits(dtype, q.Value(c.Distribution, n)) })
		if c.Distribution == op.Outliers {
			outliers := firstOutliers(q, 3)
			writeRow(&b, "Q first outliers n", len(outliers), func(i int) string { return fmt.Sprint(outliers[i]) })
			writeRow(&b, "  their values", len(outliers), func(i int) string { return fmt.Sprintf("%.17g", q.Value(c.Distribution, outliers[i])) })
		}
		writeRow(&b, "SHA-256(Q|K|V)", 1, func(int) string { return Generate(vectorSeed, c).SHA256 })
	}
	b.WriteString("```\n")
	return b.String()
}

func writeRow(b *strings.Builder, label string, n int, cell func(int) string) {
	cells := make([]string, n)
	for i := range cells {
		cells[i] = cell(i)
	}
	fmt.Fprintf(b, "  %-19s %s\n", label, strings.Join(cells, " "))
}

func storedBits(dtype sdk.DType, x float64) string {
	if dtype == sdk.FP32 {
		return fmt.Sprintf("%#08x", encodeBits(dtype, x))
	}
	return fmt.Sprintf("%#04x", encodeBits(dtype, x))
}

func firstOutliers(s Stream, count int) []int {
	var out []int
	for n := 0; len(out) < count; n++ {
		if isOutlier(s.Word(n)) {
			out = append(out, n)
		}
	}
	return out
}

func TestVectorsInDocs(t *testing.T) {
	doc, err := os.ReadFile(filepath.FromSlash(docPath))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	begin, end := strings.Index(text, vectorBegin), strings.Index(text, vectorEnd)
	if begin < 0 || end < begin {
		t.Fatalf("%s lacks the test vector markers", docPath)
	}
	got := vectorText()
	if *update {
		text = text[:begin+len(vectorBegin)] + got + text[end:]
		if err := os.WriteFile(filepath.FromSlash(docPath), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want := text[begin+len(vectorBegin) : end]; want != got {
		t.Errorf("the test vectors of %s differ from the generator's (go test -update rewrites them):\n%s", docPath, got)
	}
}
