package inputs

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

func testCase(b, h, kv, sq, sk, d int, dtype sdk.DType, dist op.Distribution) op.Case {
	return attention.NewCase(sdk.Shape{Batch: b, Heads: h, KVHeads: kv, SeqQ: sq, SeqK: sk, HeadDim: d, DType: dtype}, dist)
}

// TestGenerateMatchesStream checks the parallel generator against the
// element-by-element definition, over several chunks.
func TestGenerateMatchesStream(t *testing.T) {
	for _, dist := range []op.Distribution{op.Normal, op.Uniform, op.Outliers} {
		for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32} {
			c := testCase(1, 4, 2, 301, 150, 64, dtype, dist)
			tensors := Generate(7, c)
			for ti, data := range [][]byte{tensors.Q, tensors.K, tensors.V} {
				s := NewStream(7, c.ID, Tensor(ti))
				for n := range len(data) / dtype.Size() {
					if got, want := At(dtype, data, n), Round(dtype, s.Value(dist, n)); got != want {
						t.Fatalf("%s tensor %d element %d = %v, want %v", c.ID, ti, n, got, want)
					}
				}
			}
		}
	}
}

func TestGenerateIndependentOfParallelism(t *testing.T) {
	c := testCase(2, 4, 4, 200, 200, 64, sdk.FP16, op.Outliers)
	parallel := Generate(3, c)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	serial := Generate(3, c)
	if parallel.SHA256 != serial.SHA256 || !bytes.Equal(parallel.Q, serial.Q) {
		t.Error("the tensors depend on GOMAXPROCS")
	}
}

func TestGenerateKeys(t *testing.T) {
	base := testCase(1, 2, 2, 64, 64, 64, sdk.FP16, op.Normal)
	other := testCase(1, 2, 2, 64, 64, 64, sdk.FP16, op.Uniform)
	a := Generate(1, base)
	if b := Generate(1, base); b.SHA256 != a.SHA256 {
		t.Error("same seed and case give different tensors")
	}
	if b := Generate(2, base); b.SHA256 == a.SHA256 {
		t.Error("the seed does not change the tensors")
	}
	if b := Generate(1, other); bytes.Equal(b.Q, a.Q) {
		t.Error("the case ID does not change the tensors")
	}
	if bytes.Equal(a.Q, a.K) || bytes.Equal(a.K, a.V) {
		t.Error("Q, K and V are equal")
	}
	if a.SHA256 != HashInputs(a.Q, a.K, a.V) || len(a.Q) != 2*64*64*2 {
		t.Errorf("hash %s, %d bytes of Q", a.SHA256, len(a.Q))
	}
}

func TestDistributions(t *testing.T) {
	const n = 200_000
	tests := []struct {
		dist            op.Distribution
		mean, variance  float64
		low, high       float64
		outlierFraction float64
		varianceTol     float64 // relative; outliers make the variance noisy
	}{
		{op.Normal, 0, 1, -6, 6, 0, 0.03},
		{op.Uniform, 0, 1.0 / 3, -1, 1, 0, 0.03},
		{op.Outliers, 0, 1 + 1023.0/256, -6 * OutlierScale, 6 * OutlierScale, 1.0 / 256, 0.2},
	}
	for _, tc := range tests {
		s := NewStream(11, "moments", TensorQ)
		values := make([]float64, n)
		s.fill(values, tc.dist, 0)
		var sum, sumSq float64
		outliers := 0
		for _, v := range values {
			sum += v
			sumSq += v * v
			if v < tc.low || v >= tc.high {
				t.Fatalf("%s: value %v outside [%v, %v)", tc.dist, v, tc.low, tc.high)
			}
			if math.Abs(v) > 8 {
				outliers++
			}
		}
		mean := sum / n
		variance := sumSq/n - mean*mean
		if math.Abs(mean-tc.mean) > 0.02 || math.Abs(variance-tc.variance) > tc.varianceTol*tc.variance {
			t.Errorf("%s: mean %.4f variance %.4f, want %.4f and %.4f", tc.dist, mean, variance, tc.mean, tc.variance)
		}
		// An outlier of a value below 0.25 stays below 8; 80% of them pass.
		if got := float64(outliers) / n; math.Abs(got-0.8*tc.outlierFraction) > 0.3*tc.outlierFraction {
			t.Errorf("%s: %.5f of the values are outliers, want about %.5f", tc.dist, got, 0.8*tc.outlierFraction)
		}
	}
}

func TestWriteFiles(t *testing.T) {
	dir := t.TempDir()
	tensors := Generate(1, testCase(1, 2, 1, 16, 32, 8, sdk.BF16, op.Normal))
	files, err := WriteFiles(dir, tensors)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		want []byte
	}{{files.Q, tensors.Q}, {files.K, tensors.K}, {files.V, tensors.V}} {
		got, err := os.ReadFile(f.path)
		if err != nil || !bytes.Equal(got, f.want) {
			t.Errorf("%s: %v, %d bytes, want %d", f.path, err, len(got), len(f.want))
		}
	}
	if files.Output != filepath.Join(dir, "out.bin") {
		t.Errorf("output %s", files.Output)
	}
	if _, err := os.Stat(files.Output); !os.IsNotExist(err) {
		t.Errorf("the output file exists: %v", err)
	}
	if _, err := WriteFiles(filepath.Join(dir, "missing"), tensors); err == nil {
		t.Error("WriteFiles into a missing directory succeeded")
	}
}

func BenchmarkGenerate(b *testing.B) {
	c := testCase(1, 16, 16, 2048, 2048, 128, sdk.FP16, op.Normal)
	b.SetBytes(int64(3 * attention.ShapeOf(c).QElements() * 2))
	for b.Loop() {
		Generate(1, c)
	}
}
