package op

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/flashcore/bench/sdk"
)

// Case is one problem of a suite: an op at one point of its axes, with
// inputs drawn from one distribution.
type Case struct {
	// ID is stable and unique within the suite; the op builds it from its
	// axis values. It keys the input generator, so a case's inputs do not
	// change when the suite around it does.
	ID string
	// Op names the op (Spec.Name).
	Op           string
	Params       Params
	Distribution Distribution
}

// DType is the element type of the case's data: its "dtype" axis.
func (c Case) DType() sdk.DType { return c.Params.DType("dtype") }

// Distribution names how input values are drawn (docs/inputs.md).
type Distribution string

const (
	// Normal draws from the standard normal distribution.
	Normal Distribution = "normal"
	// Uniform draws uniformly from [-1, 1).
	Uniform Distribution = "uniform"
	// Outliers is Normal with a sparse set of values scaled ×32.
	Outliers Distribution = "outliers"
)

// Valid reports whether d is a known distribution.
func (d Distribution) Valid() bool {
	return d == Normal || d == Uniform || d == Outliers
}

// Tolerance bounds the error of one output. An element passes when
// |o-r| <= Atol + Rtol·|r|; the output passes only when also
// ||o-r||₂ / ||r||₂ <= RelL2.
type Tolerance struct {
	Atol, Rtol, RelL2 float64
}

// Times is t with every bound multiplied by factor; a factor of 0 or 1
// leaves t as it is.
func (t Tolerance) Times(factor float64) Tolerance {
	if factor == 0 || factor == 1 {
		return t
	}
	return Tolerance{Atol: t.Atol * factor, Rtol: t.Rtol * factor, RelL2: t.RelL2 * factor}
}

// OutputKey names one output of one op in one element type: what a
// suite's [tolerance.<op>.<output>.<dtype>] table sets.
type OutputKey struct {
	Op, Output string
	DType      sdk.DType
}

// DefaultTolerances are the tolerances of outputs computed in each dtype
// with fp32 accumulation, against an fp64 reference (docs/correctness.md):
// the one table every output's tolerance starts from (Spec.Tolerances).
func DefaultTolerances() map[sdk.DType]Tolerance {
	return map[sdk.DType]Tolerance{
		sdk.FP16: {Atol: 2e-3, Rtol: 1e-2, RelL2: 2e-3},
		sdk.BF16: {Atol: 1.6e-2, Rtol: 3e-2, RelL2: 1.6e-2},
		sdk.FP32: {Atol: 2e-5, Rtol: 2e-5, RelL2: 2e-5},
	}
}

// CheckSettings decide which output rows are compared with the reference.
type CheckSettings struct {
	// FullCheckMaxPairs: a case whose reference costs at most this many
	// row-element pairs (for attention B·H·Sq·Sk) has every row checked.
	FullCheckMaxPairs int64
	// SampledRows is how many rows larger cases check.
	SampledRows int
	// Repeat is how many times the checked run is done. Every output must
	// be bit-identical to the first (the determinism gate), and none may
	// crash (the stability gate).
	Repeat int
}

// DefaultCheckSettings are the [check] defaults.
func DefaultCheckSettings() CheckSettings {
	return CheckSettings{FullCheckMaxPairs: 1 << 26, SampledRows: 256, Repeat: 2}
}

// Work is what one call of a case does: its floating-point operations and
// the least memory traffic it needs.
type Work struct {
	FLOPs float64
	Bytes float64
}

// TensorData is one tensor of a case, encoded as backends read it: the
// raw little-endian bytes of a dense row-major array.
type TensorData struct {
	Name  string
	DType sdk.DType
	Dims  []int
	Data  []byte
}

// Inputs are a case's input tensors, in the op's order.
type Inputs struct {
	Tensors []TensorData
	// SHA256 is the hex SHA-256 of every input's bytes concatenated in
	// order: the input hash of the contract.
	SHA256 string
	// Private is what the op keeps from generating the inputs for its own
	// check and work, and does not give the backends (attention's exact
	// forward in mode fwd+bwd); nil for most ops.
	Private any
}

// NewInputs returns inputs with their hash.
func NewInputs(tensors ...TensorData) *Inputs {
	h := sha256.New()
	for _, t := range tensors {
		h.Write(t.Data)
	}
	return &Inputs{Tensors: tensors, SHA256: hex.EncodeToString(h.Sum(nil))}
}

// Tensor returns the input of that name, or nil.
func (in *Inputs) Tensor(name string) *TensorData {
	for i := range in.Tensors {
		if in.Tensors[i].Name == name {
			return &in.Tensors[i]
		}
	}
	return nil
}
