package sdk

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// ProtocolVersion is the version of the host–plugin protocol. The handshake
// refuses a plugin built against another version, so a stale plugin binary
// is reported as such instead of misbehaving.
//
// Version 2 added ops: a variant lists the ops it offers (Variant.Ops),
// and a request names its op, its parameters and its named tensor files
// (PrepareRequest.Op, Params, Inputs, Outputs). For attention the host
// still fills Shape and Files, so an attention plugin reads what it read
// in version 1. A variant may declare capabilities per op
// (Variant.OpCapabilities).
//
// Version 2 later gained Device.UUID, an optional field on the wire, so
// plugins built before it still start; but a GPU backend without it (or
// with one the host's driver does not list) is held to the CPU's
// ceilings.
const ProtocolVersion = 2

// DType is the element type of a tensor: Q, K, V and O are fp16, bf16 or
// fp32, and index tensors (a paged cache's block table, sequence lengths)
// are int32.
type DType string

const (
	FP16 DType = "fp16"
	BF16 DType = "bf16"
	FP32 DType = "fp32"
	// INT32 is the type of index tensors. It is not an element type a
	// suite's dtype key takes (Valid).
	INT32 DType = "int32"
)

// Size is the number of bytes one element of the type takes.
func (d DType) Size() int {
	switch d {
	case FP16, BF16:
		return 2
	case FP32, INT32:
		return 4
	}
	return 0
}

// Valid reports whether d is one of the floating-point types a case's
// data takes (fp16, bf16 or fp32).
func (d DType) Valid() bool { return d == FP16 || d == BF16 || d == FP32 }

// Shape is one attention problem. Tensors are dense, row-major, in the
// layout [batch, heads, seq, head_dim]: Q and O have Heads heads and SeqQ
// rows, K and V have KVHeads heads and SeqK rows. Query head h reads key/value
// head h / (Heads / KVHeads) (grouped-query attention when KVHeads < Heads).
//
// Causal masking is top-left aligned, as in PyTorch's
// scaled_dot_product_attention(is_causal=True): query row i sees key rows
// j <= i. Every query row therefore sees at least key row 0.
type Shape struct {
	Batch   int   `json:"batch"`
	Heads   int   `json:"heads"`
	KVHeads int   `json:"kv_heads"`
	SeqQ    int   `json:"seq_q"`
	SeqK    int   `json:"seq_k"`
	HeadDim int   `json:"head_dim"`
	Causal  bool  `json:"causal"`
	DType   DType `json:"dtype"`
	// Mode is the pass a call runs: forward (the zero value, ""), backward
	// or both. A backward call reads Q, K, V, O, dO and the row
	// log-sum-exp and writes dQ, dK and dV (docs/suites.md).
	Mode Mode `json:"mode,omitempty"`
}

// Mode is the pass of attention a call runs.
type Mode string

const (
	// Forward is O = softmax(scale·Q·Kᵀ)·V: the default.
	Forward Mode = "fwd"
	// Backward is dQ, dK and dV from Q, K, V, O, dO and the row
	// log-sum-exp, all given.
	Backward Mode = "bwd"
	// ForwardBackward is the forward then the backward in one call, as
	// training runs them: from Q, K, V and dO to O, dQ, dK and dV.
	ForwardBackward Mode = "fwd+bwd"
)

// Modes are the modes in the order tables and docs list them.
var Modes = []Mode{Forward, Backward, ForwardBackward}

// Or is m, or Forward when m is empty.
func (m Mode) Or() Mode {
	if m == "" {
		return Forward
	}
	return m
}

// Valid reports whether m is empty or one of Modes.
func (m Mode) Valid() bool { return m == "" || slices.Contains(Modes, m) }

// Scale is the softmax scale every backend uses: 1/sqrt(HeadDim).
func (s Shape) Scale() float64 { return 1 / math.Sqrt(float64(s.HeadDim)) }

// QElements is the number of elements of Q (and of O).
func (s Shape) QElements() int { return s.Batch * s.Heads * s.SeqQ * s.HeadDim }

// KVElements is the number of elements of K (and of V).
func (s Shape) KVElements() int { return s.Batch * s.KVHeads * s.SeqK * s.HeadDim }

// String is the compact form used in tables: B1 H8 S512 D64 fp16.
func (s Shape) String() string {
	heads := fmt.Sprintf("H%d", s.Heads)
	if s.KVHeads != s.Heads {
		heads = fmt.Sprintf("H%d/%d", s.Heads, s.KVHeads)
	}
	seq := fmt.Sprintf("S%d", s.SeqQ)
	if s.SeqK != s.SeqQ {
		seq = fmt.Sprintf("S%dx%d", s.SeqQ, s.SeqK)
	}
	out := fmt.Sprintf("B%d %s %s D%d %s", s.Batch, heads, seq, s.HeadDim, s.DType)
	if s.Causal {
		out += " causal"
	}
	if m := s.Mode.Or(); m != Forward {
		out += " " + string(m)
	}
	return out
}

// Capabilities says which shapes a variant can run. The host skips, with a
// reason, every case that falls outside them; a backend never has to run a
// shape it did not declare.
type Capabilities struct {
	DTypes            []DType `json:"dtypes"`
	HeadDims          []int   `json:"head_dims"`           // empty: any
	Causal            bool    `json:"causal"`              // causal masking supported
	NonCausal         bool    `json:"non_causal"`          // unmasked attention supported
	GroupedQueryHeads bool    `json:"grouped_query_heads"` // KVHeads < Heads supported
	UnequalSeqLens    bool    `json:"unequal_seq_lens"`    // SeqQ != SeqK supported
	MaxSeqLen         int     `json:"max_seq_len"`         // 0: no limit
	MaxElements       int     `json:"max_elements"`        // per tensor; 0: no limit
	NeedsGPU          bool    `json:"needs_gpu"`
	// SeqMultiple, when above 1, is the multiple both sequence lengths
	// must be: a kernel that does not mask its last tile declares its tile
	// size here, and the host skips other lengths with a reason.
	SeqMultiple int `json:"seq_multiple,omitempty"`
	// Modes lists the passes of attention the variant runs; empty means
	// forward alone, as every variant did before backward existed.
	Modes []Mode `json:"modes,omitempty"`
	// Masks lists the masks beyond plain and causal that the variant
	// applies, by name (MaskWindow, MaskSoftcap, MaskBottomRight): a case of an op that
	// declares such an axis, set away from its default, is skipped by a
	// variant that does not list it. Empty: none.
	Masks []string `json:"masks,omitempty"`
}

// The masks a variant may list in Capabilities.Masks.
const (
	// MaskWindow is a sliding window: query position p sees keys
	// p-window_left ... p+window_right only.
	MaskWindow = "window"
	// MaskSoftcap is logit soft-capping: a score s becomes c·tanh(s/c)
	// before the softmax (Gemma 2).
	MaskSoftcap = "softcap"
	// MaskBottomRight is dense attention's causal mask and window aligned
	// to the bottom-right corner (FlashAttention 2.1 and later): query
	// row i of Sq over Sk keys sits at key position Sk-Sq+i. Causal alone
	// means the top-left corner (Shape); the two differ only when
	// Sq != Sk. The serving ops (decode, varlen) are bottom-right by
	// nature and need no such entry.
	MaskBottomRight = "bottom-right"
)

// Applies reports whether the capabilities list mask m.
func (c Capabilities) Applies(mask string) bool { return slices.Contains(c.Masks, mask) }

// RunsMode reports whether the capabilities include mode m.
func (c Capabilities) RunsMode(m Mode) bool {
	m = m.Or()
	if len(c.Modes) == 0 {
		return m == Forward
	}
	return slices.Contains(c.Modes, m)
}

// Tunable is a parameter a variant is templated or configured on. The suite
// may ask for any of Values; Default is used otherwise.
type Tunable struct {
	Name        string   `json:"name"`
	Values      []string `json:"values"`
	Default     string   `json:"default"`
	Description string   `json:"description,omitempty"`
	// Ops lists the ops of the variant the tunable applies to; empty means
	// every op the variant runs. A request for another op neither names it
	// nor gets its default (ResolveTunables), and the host sweeps it only
	// over the cases of these ops.
	Ops []string `json:"ops,omitempty"`
}

// AppliesTo reports whether the tunable applies to the op of that name:
// Ops lists it, or Ops is empty.
func (t Tunable) AppliesTo(op string) bool {
	return len(t.Ops) == 0 || slices.Contains(t.Ops, op)
}

// Variant is one row a backend can produce in the tables, such as
// "sdpa-flash" of the pytorch-sdpa backend. A backend offers at least one.
type Variant struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Ops lists the ops the variant runs (package ops; `flashcore list
	// --ops`). Empty means attention alone.
	Ops []string `json:"ops,omitempty"`
	// Capabilities are what the variant runs of every op that has no
	// entry in OpCapabilities. Of another op than attention only the
	// op-independent fields (DTypes, MaxElements, NeedsGPU) mean anything.
	Capabilities Capabilities `json:"capabilities"`
	// OpCapabilities are the capabilities of single ops, keyed by the op's
	// name, where they differ from Capabilities: a variant whose rmsnorm
	// takes fp32 but whose attention does not declares rmsnorm here. Each
	// key is an op that Ops lists; CapabilitiesOf reads the two together.
	OpCapabilities map[string]Capabilities `json:"op_capabilities,omitempty"`
	Tunables       []Tunable               `json:"tunables,omitempty"`
}

// CapabilitiesOf is what the variant declares for the op of that name:
// its entry in OpCapabilities, else Capabilities.
func (v Variant) CapabilitiesOf(op string) Capabilities {
	if c, ok := v.OpCapabilities[op]; ok {
		return c
	}
	return v.Capabilities
}

// Device describes the processor a backend measures on.
type Device struct {
	Kind              string  `json:"kind"` // "gpu" or "cpu"
	Name              string  `json:"name"`
	ComputeCapability string  `json:"compute_capability,omitempty"`
	Multiprocessors   int     `json:"multiprocessors,omitempty"`
	L2Bytes           int64   `json:"l2_bytes,omitempty"`
	MemoryBytes       int64   `json:"memory_bytes,omitempty"`
	SMClockMHz        float64 `json:"sm_clock_mhz,omitempty"`  // maximum
	MemClockMHz       float64 `json:"mem_clock_mhz,omitempty"` // maximum
	MemBusWidthBits   int     `json:"mem_bus_width_bits,omitempty"`
	Driver            string  `json:"driver,omitempty"`
	Runtime           string  `json:"runtime,omitempty"` // e.g. "CUDA 13.0", "torch 2.11.0"
	Cores             int     `json:"cores,omitempty"`
	// PeakTFLOPS is the dense fp16 tensor peak of the device, when known.
	PeakTFLOPS float64 `json:"peak_tflops,omitempty"`
	// PeakGBps is the memory bandwidth peak of the device, when known.
	PeakGBps float64 `json:"peak_gbps,omitempty"`
	// UUID is a GPU's UUID as its driver gives it ("GPU-…"; cuDeviceGetUuid,
	// torch's device properties). The host applies a GPU's ceilings only to
	// a backend whose UUID is one of the GPUs it sees itself (nvidia-smi):
	// a plugin cannot borrow a device it does not run on.
	UUID string `json:"uuid,omitempty"`
}

// Description is what Describe returns: who the backend is and what it can
// do. Unavailable backends still describe themselves, with a reason.
type Description struct {
	Name              string    `json:"name"`
	Version           string    `json:"version"`
	Build             string    `json:"build,omitempty"` // e.g. VCS revision, kernel hash, compiler
	Available         bool      `json:"available"`
	UnavailableReason string    `json:"unavailable_reason,omitempty"`
	Device            Device    `json:"device"`
	Variants          []Variant `json:"variants"`
}

// L2Mode says what the L2 cache holds when a timed sample starts.
type L2Mode string

const (
	// L2Hot leaves the cache as the previous sample left it.
	L2Hot L2Mode = "hot"
	// L2Cold flushes the cache before each sample.
	L2Cold L2Mode = "cold"
)

// Measurement is the part of the measurement contract the suite controls
// (docs/measurement.md). Every backend, in every language, follows it.
type Measurement struct {
	WarmupRuns  int           `json:"warmup_runs"`  // at least this many untimed runs
	WarmupTime  time.Duration `json:"warmup_time"`  // and at least this long
	MinSamples  int           `json:"min_samples"`  // never fewer timed samples
	MaxSamples  int           `json:"max_samples"`  // never more
	TargetNoise float64       `json:"target_noise"` // stop once relative noise is below (0.01 = 1%)
	TimeCap     time.Duration `json:"time_cap"`     // stop sampling after this long
	L2          L2Mode        `json:"l2"`           // hot or cold
	CallSamples int           `json:"call_samples"` // host-inclusive call-time samples
	// Placements is how many places in device memory the case's buffers
	// take during one Run: the kernel samples are taken in that many
	// blocks, and between two blocks the backend moves the buffers to
	// fresh allocations (CollectPlacedSamples). A kernel's time depends on
	// where its buffers lie, by several percent at large shapes, so
	// samples of one placement cannot show what a second run would see
	// (docs/measurement.md). 0 or 1: the placement Prepare made, only.
	Placements int `json:"placements"`
	// NoCrossCheck asks for the timed calls alone, with no cross-check
	// taken by calls of its own after them (the Python bridges time 20
	// more calls for it): the host's clock batch (docs/measurement.md,
	// "The host's clock") times exactly MinSamples calls, so any other
	// call would count against the backend.
	NoCrossCheck bool `json:"no_cross_check,omitempty"`
}

// Diagnostic is a finding about the request, returned inside a response.
// Transport failures are Go errors; a diagnostic is something the host shows
// the user as a row or a note.
type Diagnostic struct {
	Severity Severity `json:"severity"`
	Summary  string   `json:"summary"`
	Detail   string   `json:"detail,omitempty"`
}

// Severity orders diagnostics.
type Severity string

const (
	// Unsupported means the backend will not run this case; the row is a skip.
	Unsupported Severity = "unsupported"
	// Warning is shown with the row; the case still runs.
	Warning Severity = "warning"
	// Failure means the case failed; the row is a FAIL with this reason.
	Failure Severity = "failure"
)

// Tensors names the files holding one case's tensors. Inputs are written by
// the host before Prepare; Output is written by the backend in Fetch. Each
// file is the raw little-endian bytes of the tensor in the case's dtype.
type Tensors struct {
	Q, K, V string
	Output  string
}

// TensorFile is one named tensor of a case and the file that holds it:
// the raw little-endian bytes of a dense, row-major array of Dims in
// DType.
type TensorFile struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	DType DType  `json:"dtype"`
	Dims  []int  `json:"dims"`
}

// Bytes is the size of the tensor's file.
func (t TensorFile) Bytes() int64 {
	n := int64(t.DType.Size())
	for _, d := range t.Dims {
		n *= int64(d)
	}
	return n
}

// PrepareRequest asks a backend to allocate and load one case.
type PrepareRequest struct {
	CaseID  string `json:"case_id"`
	Variant string `json:"variant"`
	// Op names the case's op ("attention" when empty), and Params are
	// the values of its axes in canonical text ("64", "true", "fp16").
	Op     string            `json:"op,omitempty"`
	Params map[string]string `json:"params,omitempty"`
	// Inputs are the op's input tensors, in its order, written by the
	// host; Outputs are the files the backend writes in Fetch.
	Inputs  []TensorFile `json:"inputs,omitempty"`
	Outputs []TensorFile `json:"outputs,omitempty"`
	// Shape and Files are the attention case of Params, Inputs and
	// Outputs, for attention plugins; zero for other ops.
	Shape    Shape             `json:"shape"`
	Tunables map[string]string `json:"tunables,omitempty"`
	Files    Tensors           `json:"files"`
	// InputSHA256 is the hex SHA-256 of the inputs concatenated in order
	// (for attention Q, K and V), as the host wrote them. The backend hashes what it loaded and reports it back.
	InputSHA256 string `json:"input_sha256"`
}

// Prepared is the answer to Prepare.
type Prepared struct {
	// LoadedSHA256 is the hex SHA-256 of Q, K and V concatenated, computed by
	// the backend over the bytes it loaded. A mismatch fails the row.
	LoadedSHA256 string       `json:"loaded_sha256"`
	Diagnostics  []Diagnostic `json:"diagnostics,omitempty"`
	// Facts are details the backend wants recorded with the result, such as
	// registers per thread or the kernel a library chose.
	Facts map[string]string `json:"facts,omitempty"`
}

// RunRequest asks for timed samples of the prepared case.
type RunRequest struct {
	CaseID      string      `json:"case_id"`
	Measurement Measurement `json:"measurement"`
	// Output, when set, is a file the backend writes after sampling: the
	// output buffer exactly as the last timed call left it, in the format
	// of Fetch's output. The backend poisons the buffer before the first
	// warm-up run (outside the timed region), so a timed call that writes
	// nothing, or writes something other than the checked call did, is
	// found: the host checks this file like the checked run's. A backend
	// whose library allocates a new output per call writes the last one.
	Output string `json:"output,omitempty"`
	// Outputs, when set, are the timed output files of every output of
	// the op, in its order; Output is the first one's path.
	Outputs []TensorFile `json:"outputs,omitempty"`
}

// DeviceState is what a backend can read of its device at one moment.
// Zero fields are unknown.
type DeviceState struct {
	SMClockMHz   float64 `json:"sm_clock_mhz,omitempty"`
	TemperatureC float64 `json:"temperature_c,omitempty"`
	PowerW       float64 `json:"power_w,omitempty"`
}

// Samples is the answer to Run.
type Samples struct {
	// KernelTimes are device-side times of the attention work alone, with
	// host launch gaps excluded (docs/measurement.md).
	KernelTimes []time.Duration `json:"kernel_times"`
	// CallTimes are host-inclusive times of one whole call, synchronised.
	CallTimes []time.Duration `json:"call_times"`
	// CrossCheckTimes are an independent measurement of the same kernel, e.g.
	// CUPTI kernel durations, when the backend has one.
	CrossCheckTimes []time.Duration `json:"cross_check_times,omitempty"`
	// Method names how KernelTimes were taken, e.g. MethodCUPTISpin.
	Method string `json:"method"`
	// SMClockMHz is the SM clock seen during sampling (0 when unknown).
	SMClockMHz float64 `json:"sm_clock_mhz,omitempty"`
	// Before and After are the device's state just before the first timed
	// sample and just after the last, where the backend can read them; the
	// host flags a row whose clock fell in between (docs/measurement.md).
	Before      *DeviceState      `json:"before,omitempty"`
	After       *DeviceState      `json:"after,omitempty"`
	Diagnostics []Diagnostic      `json:"diagnostics,omitempty"`
	Facts       map[string]string `json:"facts,omitempty"`
	// KernelBlocks counts the KernelTimes taken in each placement, in the
	// order taken; they sum to len(KernelTimes). Nil when the backend took
	// every sample in one placement (it ignores Measurement.Placements, or
	// was asked for one).
	KernelBlocks []int `json:"kernel_blocks,omitempty"`
}

// FetchRequest asks the backend to run the case once into a poisoned output
// buffer and write the output to Files.Output of the prepare request.
type FetchRequest struct {
	CaseID string `json:"case_id"`
}

// Fetched is the answer to Fetch.
type Fetched struct {
	Diagnostics []Diagnostic `json:"diagnostics,omitempty"`
}

// ReleaseRequest frees what Prepare allocated.
type ReleaseRequest struct {
	CaseID string `json:"case_id"`
}

// PoisonByte fills output buffers before the checked run: every element
// whose bytes are all PoisonByte is counted as unwritten. In fp16, bf16 and
// fp32 that pattern is a NaN that no arithmetic produces.
const PoisonByte = 0xFF

// The methods by which the Go CUDA plugins take kernel times
// (cudakit, docs/measurement.md): CUPTI's device records of
// each sample's calls behind the spin, or, where CUPTI cannot be had (no
// libcupti, or a tool holds it), CUDA events around them.
const (
	MethodCUPTISpin      = "cupti+spin"
	MethodCUDAEventsSpin = "cuda-events+spin"
)
