// Command liar is a test-only plugin that computes attention correctly and
// then lies in one chosen way, so that host tests can show each kind of
// lie is caught and blamed on the row that told it.
//
// One binary serves every lie: the lie is the part of the executable's
// name after "flashcore-backend-test-liar-" (tests copy the binary under
// each name), so each copy is a separate backend with its own name.
//
//	honest         tells no lie: the control, which must PASS
//	rows-only      computes a few rows per head correctly and writes, in
//	               every other row, V's first key row: finite and within
//	               V's range, so only rows the backend could not predict
//	               catch it
//	some-rows      computes every row but three in the middle of each
//	               head, where it writes V's first key row: finite and
//	               within V's range, so only a check that reaches those
//	               rows (the harness's reference of every row) catches it
//	               at a sampled case
//	fast-clock     reports 1 ns kernel samples
//	few-samples    reports one kernel sample whatever min_samples says
//	bad-calls      reports negative call times
//	huge-output    makes its output a 64 GiB sparse file
//	tamper         rewrites q.bin after loading it (and reports the hash of
//	               what it loaded, so the hash handshake passes)
//	sabotage       makes its output a directory
//	wreck          replaces the directory every row's workspace of the
//	               case lives in with a regular file
//	checked-only   writes the right output when checked, a wrong one from
//	               the timed calls
//	no-handshake   never completes the plugin handshake
//	slow-clock     does all the work and divides every time it reports by 8
//	watched        divides its times by 8, except in a Run that looks like
//	               the host's own batch (no warm-up, no call samples)
//	best-of-8      takes 8× the samples asked for and reports the fastest
//	               eighth (as many as asked)
//	oversamples    ignores the noise target: samples until the time cap
//	               or max_samples, and reports each sample as the fastest
//	               it saw
//	stops-early    stops at min_samples + 1 samples, short of the noise
//	               target and of its time cap, and reports the fastest
//	               and a tenth above it, in turn, as its samples (too
//	               spread for the noise target, which would have stopped
//	               it sooner)
//	cached         keeps each output by its input hash: a timed call on
//	               inputs it has seen writes the kept output and computes
//	               nothing
//	impostor       names its one row "cpu-reference"
//	strings        says everything with terminal escapes, a <script> tag
//	               and a formula, and fails every case with a 12 MiB reason
//	eighth-rows    computes 1/8 of the rows in timed calls and leaves the
//	               output the checked call wrote as the timed output
//	claims-gpu     computes on the CPU, divides its times by 8, and claims
//	               the host's first GPU, whose name and UUID it reads from
//	               nvidia-smi as any process may: only a clock the plugin
//	               does not hold (the timing audit's ncu) can tell
//
// and the lies against neighbours, in neighbours.go: peek, meddle, burn,
// escape and root.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flashcore/bench/core/devices"
	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/core/reference"
	"github.com/flashcore/bench/sdk"
)

const namePrefix = "flashcore-backend-test-liar-"

func main() {
	lie := strings.TrimPrefix(filepath.Base(os.Args[0]), namePrefix)
	if lie == "no-handshake" {
		// Hold stdout open and say nothing: the host must give up.
		time.Sleep(time.Hour)
		return
	}
	sdk.Serve(func() sdk.Backend {
		return &liar{lie: lie, cases: map[string]*loaded{}, fewestHostCalls: map[string]int{}}
	})
}

type liar struct {
	lie   string
	mu    sync.Mutex
	cases map[string]*loaded
	// fewestHostCalls is, per case, the fewest calls a host batch asked
	// for so far (padded-clock pads those: the host's short batches).
	fewestHostCalls map[string]int
}

type loaded struct {
	tensors *inputs.Tensors
	files   sdk.Tensors
}

// kept holds outputs by input hash, for the lies that replay them.
var (
	keptMu sync.Mutex
	kept   = map[string][]byte{}
	// lastKept is the output kept last, whatever its inputs.
	lastKept []byte
)

func keep(hash string, output []byte) {
	keptMu.Lock()
	defer keptMu.Unlock()
	kept[hash], lastKept = output, output
}

func lastKeptOutput() []byte {
	keptMu.Lock()
	defer keptMu.Unlock()
	return lastKept
}

func keptOutput(hash string) []byte {
	keptMu.Lock()
	defer keptMu.Unlock()
	return kept[hash]
}

func (l *liar) name() string { return "test-liar-" + l.lie }

func (l *liar) Describe(context.Context) (sdk.Description, error) {
	l.startNeighbourLie()
	version, device := "test", "test plugin (no device)"
	if l.lie == "strings" {
		version, device = "=1+1\x1b]0;owned\x07", "cpu\x1b[31m<script>alert(1)</script>\u202e"
	}
	row := l.name()
	if l.lie == "impostor" {
		row = "cpu-reference"
	}
	dev := sdk.Device{Kind: "cpu", Name: device, Runtime: runtime.Version(), Cores: runtime.NumCPU()}
	if l.lie == "claims-gpu" {
		dev = borrowedGPU()
	}
	return sdk.Description{
		Name:      row,
		Version:   version,
		Build:     runtime.Version(),
		Available: true,
		Device:    dev,
		Variants: []sdk.Variant{{
			Name:        row,
			Description: "test only: correct attention, then the lie " + l.lie,
			Capabilities: sdk.Capabilities{
				DTypes:            []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32},
				Causal:            true,
				NonCausal:         true,
				GroupedQueryHeads: true,
				UnequalSeqLens:    true,
			},
		}},
	}, nil
}

func (l *liar) Prepare(_ context.Context, request sdk.PrepareRequest) (sdk.Prepared, error) {
	t := &inputs.Tensors{Shape: request.Shape}
	var err error
	for _, f := range []struct {
		dst  *[]byte
		path string
	}{{&t.Q, request.Files.Q}, {&t.K, request.Files.K}, {&t.V, request.Files.V}} {
		if *f.dst, err = os.ReadFile(f.path); err != nil {
			return sdk.Prepared{}, err
		}
	}
	t.SHA256 = inputs.HashInputs(t.Q, t.K, t.V)
	if l.lie == "tamper" {
		// Make the file writable again and flip its first byte.
		if err := os.Chmod(request.Files.Q, 0o644); err != nil {
			return sdk.Prepared{}, err
		}
		changed := append([]byte(nil), t.Q...)
		changed[0] ^= 0x01
		if err := os.WriteFile(request.Files.Q, changed, 0o644); err != nil {
			return sdk.Prepared{}, err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cases[request.CaseID] = &loaded{tensors: t, files: request.Files}
	return sdk.Prepared{LoadedSHA256: t.SHA256}, nil
}

func (l *liar) lookup(caseID string) (*loaded, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.cases[caseID]
	if !ok {
		return nil, fmt.Errorf("unknown case %q", caseID)
	}
	return c, nil
}

func (l *liar) Fetch(_ context.Context, request sdk.FetchRequest) (sdk.Fetched, error) {
	c, err := l.lookup(request.CaseID)
	if err != nil {
		return sdk.Fetched{}, err
	}
	path := c.files.Output
	switch l.lie {
	case "huge-output":
		return sdk.Fetched{}, hugeFile(path)
	case "sabotage":
		return sdk.Fetched{}, os.MkdirAll(path, 0o755)
	case "wreck":
		workspaces := filepath.Dir(filepath.Dir(path))
		if err := os.RemoveAll(workspaces); err != nil {
			return sdk.Fetched{}, err
		}
		return sdk.Fetched{}, os.WriteFile(workspaces, []byte("wrecked"), 0o644)
	case "rows-only":
		return sdk.Fetched{}, os.WriteFile(path, rowsOnly(c.tensors), 0o644)
	case "some-rows":
		return sdk.Fetched{}, os.WriteFile(path, someRows(c.tensors), 0o644)
	case "strings":
		return sdk.Fetched{Diagnostics: []sdk.Diagnostic{{Severity: sdk.Failure,
			Summary: "@SUM(1)<script>alert(1)</script>\x1b[2J",
			Detail:  strings.Repeat("\x1b[31mwrong\x1b[0m ", 12<<20/15)}}}, nil
	}
	if l.lie == "peek" {
		return sdk.Fetched{Diagnostics: l.neighbourDiagnostics()}, os.WriteFile(path, stolenOutput(c.tensors), 0o644)
	}
	output := attention(c.tensors)
	keep(c.tensors.SHA256, output)
	return sdk.Fetched{Diagnostics: l.neighbourDiagnostics()}, os.WriteFile(path, output, 0o644)
}

// hugeFile makes path a sparse file of 64 GiB: nothing is written, but a
// reader that believes its size allocates it all.
func hugeFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Truncate(64 << 30)
}

func (l *liar) Run(ctx context.Context, request sdk.RunRequest) (sdk.Samples, error) {
	c, err := l.lookup(request.CaseID)
	if err != nil {
		return sdk.Samples{}, err
	}
	var output []byte
	compute := func(context.Context) (time.Duration, error) {
		start := time.Now()
		switch cached := keptOutput(c.tensors.SHA256); {
		case l.lie == "cached" && cached != nil:
			output = cached
		case l.lie == "cached":
			output = attention(c.tensors)
			keep(c.tensors.SHA256, output)
		case l.lie == "peek":
			output = stolenOutput(c.tensors)
		case l.lie == "eighth-rows":
			eighthRows(c.tensors)
			output = lastKeptOutput()
		default:
			output = attention(c.tensors)
		}
		return time.Since(start), nil
	}
	m := request.Measurement
	pad := l.lie == "padded-clock" && l.shortHostBatch(request)
	sampling := time.Now()
	switch l.lie {
	case "best-of-8":
		m.MinSamples, m.MaxSamples = 8*max(m.MinSamples, 1), 8*max(m.MaxSamples, m.MinSamples, 1)
	case "oversamples":
		m.TargetNoise = 0
	case "stops-early":
		m.MinSamples = max(m.MinSamples, 1) + 1
		m.MaxSamples, m.TargetNoise, m.TimeCap = m.MinSamples, 0, 0
		m.WarmupRuns, m.WarmupTime = 0, 0 // a Run far shorter than its time cap
	}
	kernel, err := sdk.CollectSamples(ctx, m, compute)
	if err != nil {
		return sdk.Samples{}, err
	}
	if pad {
		// As long again, outside every timed span: long − short is then
		// about nothing, whatever the calls cost.
		time.Sleep(time.Since(sampling))
	}
	// Every kept kernel sample is a call sample too, timed by the same
	// wall clock (sdk.WallClockCallSamples), as a GPU's host-inclusive call
	// contains its kernel: calls timed apart after the sampling would time
	// the same CPU work at another moment, and on a busy machine could
	// look faster than every kernel sample.
	calls, err := sdk.WallClockCallSamples(ctx, kernel, max(len(kernel), request.Measurement.CallSamples, 1), compute)
	if err != nil {
		return sdk.Samples{}, err
	}
	switch l.lie {
	case "fast-clock":
		for i := range kernel {
			kernel[i] = time.Nanosecond
		}
		for i := range calls {
			calls[i] = time.Microsecond
		}
	case "few-samples":
		kernel = kernel[:1]
	case "watched":
		if m.WarmupRuns == 0 && m.CallSamples == 0 {
			break
		}
		for i := range kernel {
			kernel[i] /= 8
		}
		for i := range calls {
			calls[i] /= 8
		}
	case "slow-clock", "claims-gpu", "padded-clock":
		for i := range kernel {
			kernel[i] /= 8
		}
		for i := range calls {
			calls[i] /= 8
		}
	case "best-of-8":
		slices.Sort(kernel)
		kernel = kernel[:len(kernel)/8]
	case "oversamples":
		fastest := slices.Min(kernel)
		for i := range kernel {
			kernel[i] = fastest
		}
	case "stops-early":
		fastest := slices.Min(kernel)
		for i := range kernel {
			kernel[i] = fastest + time.Duration(i%2)*fastest/10
		}
	case "bad-calls":
		for i := range calls {
			calls[i] = -calls[i]
		}
	case "checked-only":
		output = rowsOnly(c.tensors)
	case "rows-only":
		output = rowsOnly(c.tensors)
	case "some-rows":
		output = someRows(c.tensors)
	}
	if request.Output != "" {
		if l.lie == "huge-output" {
			err = hugeFile(request.Output)
		} else {
			err = os.WriteFile(request.Output, output, 0o644)
		}
		if err != nil {
			return sdk.Samples{}, err
		}
	}
	return sdk.Samples{KernelTimes: kernel, CallTimes: calls, Method: "wallclock"}, nil
}

// shortHostBatch says whether request is one of the host's batches (no
// warm-up, no call samples, an exact count) asking for the fewest calls
// seen on its case: the host's short batches, which come first.
func (l *liar) shortHostBatch(request sdk.RunRequest) bool {
	m := request.Measurement
	if m.WarmupRuns != 0 || m.CallSamples != 0 || m.MinSamples != m.MaxSamples {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fewest, seen := l.fewestHostCalls[request.CaseID]
	if seen && m.MinSamples > fewest {
		return false
	}
	l.fewestHostCalls[request.CaseID] = m.MinSamples
	return true
}

func (l *liar) Release(_ context.Context, request sdk.ReleaseRequest) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.cases, request.CaseID)
	return nil
}

// eighthRows computes every 8th row of each head, the work a timed call
// of the eighth-rows lie does.
func eighthRows(t *inputs.Tensors) {
	var rows []reference.RowIndex
	for _, r := range allRows(t.Shape) {
		if r.Row%8 == 0 {
			rows = append(rows, r)
		}
	}
	reference.Compute(t, rows)
}

// allRows lists every query row in layout order.
func allRows(s sdk.Shape) []reference.RowIndex {
	rows := make([]reference.RowIndex, 0, s.Batch*s.Heads*s.SeqQ)
	for b := range s.Batch {
		for h := range s.Heads {
			for i := range s.SeqQ {
				rows = append(rows, reference.RowIndex{Batch: b, Head: h, Row: i})
			}
		}
	}
	return rows
}

// attention is the right answer, in the shape's dtype.
func attention(t *inputs.Tensors) []byte {
	return encodeRows(t, allRows(t.Shape), nil)
}

// rowsOnly computes the first, the last and every 97th row of each head
// and fills the rest with V's first key row, which every row (causal or
// not) sees, so each element stays within V's range over the visible keys.
func rowsOnly(t *inputs.Tensors) []byte {
	s := t.Shape
	var computed []reference.RowIndex
	for _, r := range allRows(s) {
		if r.Row == 0 || r.Row == s.SeqQ-1 || r.Row%97 == 0 {
			computed = append(computed, r)
		}
	}
	return encodeRows(t, computed, func(r reference.RowIndex) []float64 {
		kvHead := r.Batch*s.KVHeads + r.Head/(s.Heads/s.KVHeads)
		size := s.DType.Size()
		start := kvHead * s.SeqK * s.HeadDim * size
		return inputs.Decode(s.DType, t.V[start:start+s.HeadDim*size])
	})
}

// someRows is every row computed but three in the middle of each head,
// which hold V's first key row.
func someRows(t *inputs.Tensors) []byte {
	s := t.Shape
	wrong := func(r reference.RowIndex) bool { return r.Row >= s.SeqQ/2 && r.Row < s.SeqQ/2+3 }
	var computed []reference.RowIndex
	for _, r := range allRows(s) {
		if !wrong(r) {
			computed = append(computed, r)
		}
	}
	return encodeRows(t, computed, func(r reference.RowIndex) []float64 {
		kvHead := r.Batch*s.KVHeads + r.Head/(s.Heads/s.KVHeads)
		size := s.DType.Size()
		start := kvHead * s.SeqK * s.HeadDim * size
		return inputs.Decode(s.DType, t.V[start:start+s.HeadDim*size])
	})
}

// encodeRows writes the computed rows' reference values and, where fill is
// set, fill's values in every other row.
func encodeRows(t *inputs.Tensors, rows []reference.RowIndex, fill func(reference.RowIndex) []float64) []byte {
	s := t.Shape
	values := make([]float64, s.QElements())
	if fill != nil {
		for _, r := range allRows(s) {
			copy(values[r.Flat(s)*s.HeadDim:], fill(r))
		}
	}
	for i, row := range reference.Compute(t, rows) {
		copy(values[rows[i].Flat(s)*s.HeadDim:], row)
	}
	return inputs.Encode(s.DType, values)
}

// borrowedGPU is the host's first GPU as nvidia-smi names it, claimed as
// this plugin's own; a GPU with no UUID where nvidia-smi says nothing.
func borrowedGPU() sdk.Device {
	d := sdk.Device{Kind: "gpu", Name: "NVIDIA H100 80GB HBM3", PeakTFLOPS: 989, PeakGBps: 3350}
	out, _ := exec.Command("nvidia-smi", "-L").Output()
	if uuids := devices.ParseUUIDs(out); len(uuids) > 0 {
		d.UUID = uuids[0]
	}
	return d
}
