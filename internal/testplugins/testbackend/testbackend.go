// Package testbackend is the shared core of the test-only plugins in
// internal/testplugins. Start at New.
//
// The Backend it makes is honest in everything but one chosen way: it runs
// on the CPU, declares one variant that accepts every dtype, head dim,
// masking, grouped-query layout and sequence-length pair, loads the input
// files and reports their real SHA-256, poisons its output before writing
// it and times real (trivial) work under sdk.CollectSamples. Each plugin
// then swaps in one misbehaviour through Options, so a host test that uses
// it sees that misbehaviour and nothing else.
//
// Its "kernel" copies Q into the output (Q and O have the same shape and
// dtype), so even the well-behaved echo plugin writes a wrong answer on
// purpose: these plugins test the transport and the host, not attention.
package testbackend

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/flashcore/bench/sdk"
)

// Options choose a test plugin's name and its misbehaviour. The zero
// misbehaviour is none.
type Options struct {
	// Name is the backend's name and its one variant's name.
	Name string
	// Description says, in the variant's description, what the plugin does
	// wrong.
	Description string
	// FillOutput writes the output in Fetch, over the poisoned buffer; nil
	// copies Q.
	FillOutput func(output []byte, shape sdk.Shape, q []byte)
	// BeforeRun, when set, is called at the start of Run (to crash or hang).
	BeforeRun func(ctx context.Context)
	// Device, when set, is the device Describe reports instead of the CPU.
	Device *sdk.Device
	// PrepareFacts, when set, adds facts to every Prepare's answer.
	PrepareFacts func() map[string]string
	// Ops are the ops the variant lists (nil: attention alone). For an op
	// other than attention the output is the size of the first input, and
	// FillOutput gets that input as q and its dtype in the shape.
	Ops []string
}

// Backend is the test plugins' sdk.Backend.
type Backend struct {
	options Options

	mu    sync.Mutex
	cases map[string]*loadedCase
}

var (
	_ sdk.Backend = (*Backend)(nil)
	_ sdk.Closer  = (*Backend)(nil)
)

// loadedCase is what Prepare keeps for one case.
type loadedCase struct {
	shape      sdk.Shape
	q, k, v    []byte
	outputPath string
}

// New makes a Backend; it has no side effects.
func New(options Options) *Backend {
	if options.FillOutput == nil {
		options.FillOutput = CopyQ
	}
	return &Backend{options: options, cases: map[string]*loadedCase{}}
}

// Describe reports one CPU variant that accepts every shape.
func (b *Backend) Describe(ctx context.Context) (sdk.Description, error) {
	d := b.describe()
	if b.options.Device != nil {
		d.Device = *b.options.Device
	}
	return d, nil
}

func (b *Backend) describe() sdk.Description {
	return sdk.Description{
		Name:      b.options.Name,
		Version:   "test",
		Build:     runtime.Version(),
		Available: true,
		Device: sdk.Device{
			Kind:    "cpu",
			Name:    "test plugin (no device)",
			Runtime: runtime.Version(),
			Cores:   runtime.NumCPU(),
		},
		Variants: []sdk.Variant{{
			Name:        b.options.Name,
			Description: b.options.Description,
			Ops:         b.options.Ops,
			Capabilities: sdk.Capabilities{
				DTypes:            []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32},
				Causal:            true,
				NonCausal:         true,
				GroupedQueryHeads: true,
				UnequalSeqLens:    true,
			},
		}},
	}
}

// Prepare loads the input files and reports the SHA-256 of what it loaded.
func (b *Backend) Prepare(_ context.Context, request sdk.PrepareRequest) (sdk.Prepared, error) {
	if request.Variant != b.options.Name {
		return sdk.Prepared{}, fmt.Errorf("unknown variant %q (have %q)", request.Variant, b.options.Name)
	}
	if request.Op != "" && request.Op != "attention" {
		return b.prepareOp(request)
	}
	shape := request.Shape
	if !shape.DType.Valid() {
		return sdk.Prepared{}, fmt.Errorf("unknown dtype %q", shape.DType)
	}
	loaded := &loadedCase{shape: shape, outputPath: request.Files.Output}
	var err error
	size := shape.DType.Size()
	if loaded.q, err = readTensor(request.Files.Q, shape.QElements()*size); err != nil {
		return sdk.Prepared{}, err
	}
	if loaded.k, err = readTensor(request.Files.K, shape.KVElements()*size); err != nil {
		return sdk.Prepared{}, err
	}
	if loaded.v, err = readTensor(request.Files.V, shape.KVElements()*size); err != nil {
		return sdk.Prepared{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cases[request.CaseID] = loaded
	prepared := sdk.Prepared{LoadedSHA256: InputSHA256(loaded.q, loaded.k, loaded.v)}
	if b.options.PrepareFacts != nil {
		prepared.Facts = b.options.PrepareFacts()
	}
	return prepared, nil
}

// prepareOp loads the inputs of a case of any other op, in order, and
// keeps the first as q.
func (b *Backend) prepareOp(request sdk.PrepareRequest) (sdk.Prepared, error) {
	if len(request.Inputs) == 0 || len(request.Outputs) == 0 {
		return sdk.Prepared{}, fmt.Errorf("op %s: no inputs or outputs named", request.Op)
	}
	hash := sha256.New()
	loaded := &loadedCase{shape: sdk.Shape{DType: request.Inputs[0].DType}, outputPath: request.Outputs[0].Path}
	for i, in := range request.Inputs {
		data, err := os.ReadFile(in.Path)
		if err != nil {
			return sdk.Prepared{}, err
		}
		hash.Write(data)
		if i == 0 {
			loaded.q = data
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cases[request.CaseID] = loaded
	return sdk.Prepared{LoadedSHA256: hex.EncodeToString(hash.Sum(nil))}, nil
}

func readTensor(path string, wantBytes int) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) != wantBytes {
		return nil, fmt.Errorf("%s: %d bytes, want %d", path, len(data), wantBytes)
	}
	return data, nil
}

// InputSHA256 is the contract's input hash: hex SHA-256 of Q, K and V
// concatenated.
func InputSHA256(q, k, v []byte) string {
	hash := sha256.New()
	for _, tensor := range [][]byte{q, k, v} {
		hash.Write(tensor)
	}
	return hex.EncodeToString(hash.Sum(nil))
}

// Fetch poisons an output buffer, fills it and writes the output file.
func (b *Backend) Fetch(_ context.Context, request sdk.FetchRequest) (sdk.Fetched, error) {
	loaded, err := b.lookup(request.CaseID)
	if err != nil {
		return sdk.Fetched{}, err
	}
	output := make([]byte, len(loaded.q))
	Poison(output)
	b.options.FillOutput(output, loaded.shape, loaded.q)
	return sdk.Fetched{}, os.WriteFile(loaded.outputPath, output, 0o644)
}

// Run times the copy of Q into an output buffer.
func (b *Backend) Run(ctx context.Context, request sdk.RunRequest) (sdk.Samples, error) {
	if b.options.BeforeRun != nil {
		b.options.BeforeRun(ctx)
	}
	loaded, err := b.lookup(request.CaseID)
	if err != nil {
		return sdk.Samples{}, err
	}
	output := make([]byte, len(loaded.q))
	copyQ := func(context.Context) (time.Duration, error) {
		start := time.Now()
		copy(output, loaded.q)
		return time.Since(start), nil
	}
	kernelTimes, err := sdk.CollectSamples(ctx, request.Measurement, copyQ)
	if err != nil {
		sdk.Logger().Warn("run stopped", "case", request.CaseID, "error", err.Error())
		return sdk.Samples{}, err
	}
	callTimes := make([]time.Duration, request.Measurement.CallSamples)
	for i := range callTimes {
		callTimes[i], _ = copyQ(ctx)
	}
	if request.Output != "" {
		// The timed output is what the checked run writes, so the only
		// finding is the plugin's chosen misbehaviour.
		Poison(output)
		b.options.FillOutput(output, loaded.shape, loaded.q)
		if err := os.WriteFile(request.Output, output, 0o644); err != nil {
			return sdk.Samples{}, err
		}
	}
	return sdk.Samples{KernelTimes: kernelTimes, CallTimes: callTimes, Method: "wallclock-copy"}, nil
}

// Release forgets the case.
func (b *Backend) Release(_ context.Context, request sdk.ReleaseRequest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.cases[request.CaseID]; !ok {
		return fmt.Errorf("unknown case %q", request.CaseID)
	}
	delete(b.cases, request.CaseID)
	return nil
}

// Close logs how many cases the host left unreleased, so a test can see
// that sdk.Serve closed the backend.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	sdk.Logger().Info("backend closed", "open_cases", len(b.cases))
	return nil
}

func (b *Backend) lookup(caseID string) (*loadedCase, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	loaded, ok := b.cases[caseID]
	if !ok {
		return nil, fmt.Errorf("unknown case %q", caseID)
	}
	return loaded, nil
}

// Poison fills buffer with sdk.PoisonByte, as a backend must before the
// checked run.
func Poison(buffer []byte) {
	for i := range buffer {
		buffer[i] = sdk.PoisonByte
	}
}

// CopyQ is the well-behaved FillOutput: it writes every element, with Q.
func CopyQ(output []byte, _ sdk.Shape, q []byte) { copy(output, q) }

// FillZeros writes an all-zero output.
func FillZeros(output []byte, _ sdk.Shape, _ []byte) { clear(output) }

// FillNaN writes a quiet NaN of the shape's dtype into every element. The
// NaN is not the poison pattern, so the host sees written NaNs, not
// unwritten elements.
func FillNaN(output []byte, shape sdk.Shape, _ []byte) {
	switch shape.DType {
	case sdk.FP32:
		for i := 0; i+4 <= len(output); i += 4 {
			binary.LittleEndian.PutUint32(output[i:], math.Float32bits(float32(math.NaN())))
		}
	case sdk.FP16, sdk.BF16:
		pattern := uint16(0x7E00) // fp16 quiet NaN
		if shape.DType == sdk.BF16 {
			pattern = 0x7FC0 // bf16 quiet NaN
		}
		for i := 0; i+2 <= len(output); i += 2 {
			binary.LittleEndian.PutUint16(output[i:], pattern)
		}
	}
}
