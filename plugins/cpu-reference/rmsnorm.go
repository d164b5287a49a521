package cpureference

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"

	"github.com/flashcore/bench/sdk"
)

// rmsnormOp is the op name of RMS normalisation (flashcore list --ops).
const rmsnormOp = "rmsnorm"

// rmsnormEps is the op's epsilon.
const rmsnormEps = 1e-6

// rmsnormProblem is one rmsnorm case in float32: y = x / sqrt(mean(x²) +
// eps) · weight over each of rows rows of cols elements.
type rmsnormProblem struct {
	rows, cols int
	x, weight  []float32
	y          []float32
}

// rmsnorm computes every row, accumulating the mean square in float64.
func rmsnorm(p rmsnormProblem) {
	for r := range p.rows {
		row := p.x[r*p.cols : (r+1)*p.cols]
		var sumSq float64
		for _, v := range row {
			sumSq += float64(v) * float64(v)
		}
		inv := float32(1 / math.Sqrt(sumSq/float64(p.cols)+rmsnormEps))
		out := p.y[r*p.cols : (r+1)*p.cols]
		for j, v := range row {
			out[j] = v * inv * p.weight[j]
		}
	}
}

// loadRMSNorm reads x and weight from the request's named inputs, hashes
// their bytes in order, and allocates y.
func loadRMSNorm(req sdk.PrepareRequest) (*preparedCase, string, error) {
	if len(req.Inputs) != 2 || req.Inputs[0].Name != "x" || req.Inputs[1].Name != "weight" || len(req.Outputs) != 1 {
		return nil, "", fmt.Errorf("rmsnorm wants inputs x and weight and one output, got %d inputs and %d outputs", len(req.Inputs), len(req.Outputs))
	}
	x, w := req.Inputs[0], req.Inputs[1]
	if len(x.Dims) != 2 || len(w.Dims) != 1 || w.Dims[0] != x.Dims[1] {
		return nil, "", fmt.Errorf("rmsnorm wants x[rows, cols] and weight[cols], got x%v and weight%v", x.Dims, w.Dims)
	}
	hash := sha256.New()
	var tensors [2][]float32
	for i, in := range []sdk.TensorFile{x, w} {
		raw, err := os.ReadFile(in.Path)
		if err != nil {
			return nil, "", fmt.Errorf("read %s: %w", in.Name, err)
		}
		if want := in.Bytes(); int64(len(raw)) != want {
			return nil, "", fmt.Errorf("%s file %s has %d bytes, want %d", in.Name, in.Path, len(raw), want)
		}
		hash.Write(raw)
		if tensors[i], err = decode(in.DType, raw); err != nil {
			return nil, "", fmt.Errorf("%s file %s: %w", in.Name, in.Path, err)
		}
	}
	p := rmsnormProblem{rows: x.Dims[0], cols: x.Dims[1], x: tensors[0], weight: tensors[1],
		y: make([]float32, x.Dims[0]*x.Dims[1])}
	loaded := &preparedCase{
		run:     func() { rmsnorm(p) },
		outputs: []*output{newOutput(p.y, x.DType, req.Outputs[0].Path)},
	}
	return loaded, hex.EncodeToString(hash.Sum(nil)), nil
}
