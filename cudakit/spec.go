package cudakit

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/cudakit/gpu/kernels"
	"github.com/flashcore/bench/sdk"
)

// Spec is what one CUDA plugin tells the shared backend.
type Spec struct {
	Name    string // backend name, e.g. "cuda-v8"
	Version string // plugin version
	// Variant is the one variant the plugin offers. Its Ops lists the ops
	// it runs (empty: attention alone); each has a plan below.
	Variant sdk.Variant
	Kernel  KernelFiles
	// Plan maps an attention case (inside the capabilities) and its
	// resolved tunables to the kernel function and launch geometry. An
	// error means the plugin cannot run this case; it is reported as
	// unsupported.
	Plan func(shape sdk.Shape, tunables map[string]string) (Launch, error)
	// ModePlans are the plans of attention's modes other than forward
	// (sdk.Backward, sdk.ForwardBackward), by mode: each mode the
	// variant's attention capabilities list in Modes, forward aside, has
	// one here, and none is here that they do not list (CheckOps). Such a
	// case is planned as an op other than attention is: its OpCase has the
	// mode's named tensors (op.Spec.InputsOf and OutputsOf: q, k, v, o,
	// do and lse in, dq, dk and dv out, for bwd). Forward stays with Plan.
	ModePlans map[sdk.Mode]OpPlan
	// Ops are the plans of the ops other than attention, by op name
	// (package ops): each op Variant.Ops lists, attention aside, has one
	// here, and none is here that Variant.Ops does not list (CheckOps). A
	// case of an op the variant does not list is refused as unsupported.
	Ops map[string]OpPlan
	// Device, when set, says why the kernels cannot run on a device (nil:
	// they can). It is asked before the fatbin's targets, so a plugin whose
	// kernels need one architecture (sm_90a) refuses other devices by name.
	Device func(d gpu.DeviceInfo) error
	// Image, when set, supplies the kernels in place of Kernel: Prepare asks
	// it, with the device and the case's tunables, for the module image
	// that holds the plan's functions (the cuda-file plugin compiles a .cu
	// file here). Its error is the case's error, compile log included.
	Image func(device gpu.DeviceInfo, tunables map[string]string) (Image, error)
	// Build is the Description's Build where Image supplies the kernels.
	Build string
}

// ErrInvalidPlan marks a Plan error that is the plugin's fault, not a case
// it cannot run (a formula of a CUDA-file spec that does not evaluate): the
// case is an error, not a skip.
var ErrInvalidPlan = errors.New("invalid plan")

// Image is a module image (cubin, fatbin or PTX) made for one device.
type Image struct {
	// Key identifies the image: images with the same key are loaded once.
	Key  string
	Data []byte
	// Facts replace the facts an embedded fatbin's manifest gives: source
	// hash, compiler, flags and target (FactKernelSourceHash, ...).
	Facts map[string]string
	// Symbols maps a launch's Function to the symbol it is in the image,
	// where they differ: a template-id to its instance's mangled name.
	Symbols map[string]string
}

// Symbol is the symbol of function in the image.
func (img *Image) Symbol(function string) string {
	if img != nil && img.Symbols[function] != "" {
		return img.Symbols[function]
	}
	return function
}

// KernelFiles are the embedded build outputs and sources of a plugin.
type KernelFiles struct {
	Fatbin   []byte            // nil in builds without the cuda tag
	Manifest []byte            // the fatbin's manifest (gpu.Manifest)
	Sources  map[string][]byte // the sources, keyed by repository path
}

// Launch is how one case runs: the kernel, its geometry, and what it is
// given. Every call of the case (the checked one and each timed one) runs
// the same sequence: reset the scratch buffers marked Reset (and O, with
// OutputReset), launch this kernel, then each of Then, in order, on one
// stream. docs/cuda.md is the
// contract a kernel author reads.
type Launch struct {
	Function           string
	Grid, Block        gpu.Dim3
	DynamicSharedBytes int
	// Params are the kernel's parameters in order. nil means, for
	// attention, the standard list (KernelArgs: q, k, v, o, heads,
	// kv_heads, seq_q, seq_k, causal, scale·log2(e)) and, for another op, a
	// pointer to each input and then each output, in the request's order;
	// either followed by a pointer to each scratch buffer, in the order of
	// Scratch.
	Params []Param
	// Scratch are device buffers the kernels need besides the case's
	// tensors (Q, K, V and O for attention; an op's named inputs and
	// outputs): partial outputs, row statistics, counters, allocated at
	// Prepare and freed at Release.
	Scratch []Scratch
	// Then are kernels launched after this one in every call, in order (a
	// combine step after a split-KV step). They see this launch's buffers;
	// their own Scratch and Then must be empty.
	Then []Launch
	// OutputReset sets every 4-byte word of O (of every output, for an op
	// other than attention) to OutputWord before every call, for a kernel
	// that reads its output before it writes it (accumulates into it). The
	// output then no longer starts poisoned, so an element the kernel never
	// writes is caught only where the reset value is wrong.
	OutputReset bool
	OutputWord  uint32
}

// Scratch is one device buffer of a Launch.
type Scratch struct {
	Name  string // how Params name it; not the name of one of the case's tensors
	Bytes int64
	// Reset sets every 4-byte word of the buffer to Word before every call,
	// inside the timed region (it is work the kernel needs done): Word 0
	// zeroes counters and sums, math.Float32bits(-inf) starts running
	// maxima. Bytes must then be a multiple of 4. A buffer not reset is
	// filled with poison once, at Prepare, so a kernel that reads it before
	// writing it is caught by the check rather than passing by luck.
	Reset bool
	Word  uint32
}

// Zeroed is a scratch buffer of bytes zeroed before every call.
func Zeroed(name string, bytes int64) Scratch { return Scratch{Name: name, Bytes: bytes, Reset: true} }

// Param is one kernel parameter: a buffer, by name (a tensor of the case:
// q, k, v or o for attention, an input or output of another op by its name
// in the op; or a scratch buffer), a TMA tensor map of one, or a value.
type Param struct {
	Buffer    string
	Value     gpu.Arg
	TensorMap *TensorMap
}

// TensorMap is a TMA tensor map (cuTensorMapEncodeTiled) of one of the
// case's buffers, seen as a dense tensor of Dims elements of DType
// (innermost first), read in boxes of Box elements, 128-byte swizzled (the
// layout wgmma's shared-memory descriptors read), zeros where a box reaches
// past Dims. A map is 128 bytes and a kernel parameter holds 8
// (gorgonia.org/cu copies no more), so the kit encodes the map for the
// buffer's address at Prepare and again whenever the buffers move, keeps it
// in a device buffer of its own and passes that buffer's address: the
// kernel takes a const CUtensorMap* in global memory and fences it into the
// tensor-map proxy (fence.proxy.tensormap::generic.acquire) before its
// first use.
type TensorMap struct {
	Buffer string
	DType  sdk.DType
	Dims   []uint64
	Box    []uint32
}

// TensorMapParam passes the address of a tensor map of a buffer.
func TensorMapParam(m TensorMap) Param { return Param{TensorMap: &m} }

// BufferParam passes a pointer to the named buffer.
func BufferParam(name string) Param { return Param{Buffer: name} }

// ValueParam passes a scalar (gpu.Int32, gpu.Float32, gpu.Float64, ...).
func ValueParam(a gpu.Arg) Param { return Param{Value: a} }

// tensorBuffers are the buffers every attention case has.
var tensorBuffers = []string{"q", "k", "v", "o"}

// TensorParams passes a pointer to each input of the case and then to each
// output, in the request's order, followed by the scalars: the usual
// parameter list of a kernel of an op other than attention.
func TensorParams(c OpCase, scalars ...gpu.Arg) []Param {
	params := make([]Param, 0, len(c.Inputs)+len(c.Outputs)+len(scalars))
	for _, t := range c.Inputs {
		params = append(params, BufferParam(t.Name))
	}
	for _, t := range c.Outputs {
		params = append(params, BufferParam(t.Name))
	}
	for _, a := range scalars {
		params = append(params, ValueParam(a))
	}
	return params
}

// Steps are the launches of one call, in order: l, then each of l.Then.
func (l Launch) Steps() []Launch {
	return append([]Launch{l}, l.Then...)
}

// Validate says what is wrong with a plan of an attention case: a scratch
// buffer without a name, a size or a unique name, a parameter naming a
// buffer that does not exist, a nested Then or Scratch, an empty grid or
// block.
func (l Launch) Validate() error { return l.ValidateWith(tensorBuffers) }

// ValidateWith is Validate for a case whose tensors are named tensors (an
// op's inputs and outputs): the buffers a parameter may name besides the
// scratch buffers, and the names a scratch buffer may not take.
func (l Launch) ValidateWith(tensors []string) error {
	names := slices.Clone(tensors)
	for _, s := range l.Scratch {
		switch {
		case s.Name == "":
			return fmt.Errorf("a scratch buffer has no name")
		case slices.Contains(names, s.Name):
			return fmt.Errorf("scratch buffer %q: the name is taken", s.Name)
		case s.Bytes <= 0:
			return fmt.Errorf("scratch buffer %q: size %d bytes must be positive", s.Name, s.Bytes)
		case s.Reset && s.Bytes%4 != 0:
			return fmt.Errorf("scratch buffer %q: a buffer reset word by word needs a size that is a multiple of 4, not %d", s.Name, s.Bytes)
		}
		names = append(names, s.Name)
	}
	for i, step := range l.Steps() {
		if i > 0 && (len(step.Scratch) > 0 || len(step.Then) > 0) {
			return fmt.Errorf("%s: a following kernel has its own scratch or following kernels; declare them on the first", step.Function)
		}
		if step.Function == "" {
			return fmt.Errorf("kernel %d of the plan has no function", i+1)
		}
		if step.Grid.Threads() <= 0 || step.Block.Threads() <= 0 {
			return fmt.Errorf("%s: grid %v and block %v must be positive", step.Function, step.Grid, step.Block)
		}
		if step.DynamicSharedBytes < 0 {
			return fmt.Errorf("%s: negative dynamic shared memory", step.Function)
		}
		for _, p := range step.Params {
			if p.Buffer != "" && !slices.Contains(names, p.Buffer) {
				return fmt.Errorf("%s: parameter names buffer %q; there are %s", step.Function, p.Buffer, strings.Join(names, ", "))
			}
			if m := p.TensorMap; m != nil {
				if !slices.Contains(names, m.Buffer) {
					return fmt.Errorf("%s: a tensor map of buffer %q; there are %s", step.Function, m.Buffer, strings.Join(names, ", "))
				}
				if err := gpu.CheckTensorMap(math.MaxInt64, m.DType.Size(), m.Dims, m.Box); err != nil {
					return fmt.Errorf("%s: %w", step.Function, err)
				}
			}
		}
	}
	return nil
}

// ScratchBytes is the size of every scratch buffer together.
func (l Launch) ScratchBytes() int64 {
	var n int64
	for _, s := range l.Scratch {
		n += s.Bytes
	}
	return n
}

// Sources returns the shared kernel sources (cudakit/gpu/kernels) plus one
// plugin's kernel source at path, keyed by repository path: what a plugin's
// manifest is verified against.
func Sources(path string, kernelSource []byte) map[string][]byte {
	files := kernels.Sources()
	files[path] = kernelSource
	return files
}

// KernelName is the extern "C" name of an attention kernel:
// attn_fwd_<dtype>_d<head dim>, then each of suffix joined by "_", e.g.
// attn_fwd_fp16_d64_n32_s2.
func KernelName(dtype sdk.DType, headDim int, suffix ...string) string {
	return ModeKernelName(sdk.Forward, dtype, headDim, suffix...)
}

// ModeKernelName is the extern "C" name of a kernel of attention in mode
// m: KernelName's with attn_fwd replaced by the mode's prefix
// (ModeKernelPrefix), e.g. attn_bwd_fp16_d64_dq.
func ModeKernelName(m sdk.Mode, dtype sdk.DType, headDim int, suffix ...string) string {
	return strings.Join(append([]string{ModeKernelPrefix(m), string(dtype), fmt.Sprintf("d%d", headDim)}, suffix...), "_")
}

// ModeKernelPrefix is how the names of a mode's kernels start: attn_fwd,
// attn_bwd, or attn_fwdbwd for fwd+bwd.
func ModeKernelPrefix(m sdk.Mode) string {
	return "attn_" + strings.ReplaceAll(string(m.Or()), "+", "")
}

// OpKernelName is the extern "C" name of a kernel of an op other than
// attention: <op>_<dtype>, then each of suffix joined by "_", e.g.
// rmsnorm_fp16_v8.
func OpKernelName(op string, dtype sdk.DType, suffix ...string) string {
	return strings.Join(append([]string{op, string(dtype)}, suffix...), "_")
}

// Grid limits of CUDA launches: y and z (heads and batch here), and x.
const (
	maxGridYZ = 65535
	// MaxGridX is the most blocks a grid has along x.
	MaxGridX = 1<<31 - 1
)

// AttentionGrid is the grid every attention kernel uses: one block per
// rowsPerBlock query rows, per head, per batch.
func AttentionGrid(shape sdk.Shape, rowsPerBlock int) (gpu.Dim3, error) {
	if rowsPerBlock <= 0 {
		return gpu.Dim3{}, fmt.Errorf("rows per block %d must be positive", rowsPerBlock)
	}
	if shape.Heads > maxGridYZ || shape.Batch > maxGridYZ {
		return gpu.Dim3{}, fmt.Errorf("%d heads × batch %d exceeds the CUDA grid limit of %d", shape.Heads, shape.Batch, maxGridYZ)
	}
	tiles := (shape.SeqQ + rowsPerBlock - 1) / rowsPerBlock
	return gpu.Dim3{X: tiles, Y: shape.Heads, Z: shape.Batch}, nil
}

// KeyGrid is the grid of a kernel that owns key rows, as a backward's
// dK and dV kernel does: one block per keysPerBlock key rows, per
// key/value head, per batch.
func KeyGrid(shape sdk.Shape, keysPerBlock int) (gpu.Dim3, error) {
	if keysPerBlock <= 0 {
		return gpu.Dim3{}, fmt.Errorf("keys per block %d must be positive", keysPerBlock)
	}
	if shape.KVHeads > maxGridYZ || shape.Batch > maxGridYZ {
		return gpu.Dim3{}, fmt.Errorf("%d key/value heads × batch %d exceeds the CUDA grid limit of %d", shape.KVHeads, shape.Batch, maxGridYZ)
	}
	tiles := (shape.SeqK + keysPerBlock - 1) / keysPerBlock
	return gpu.Dim3{X: tiles, Y: shape.KVHeads, Z: shape.Batch}, nil
}

// KernelArgs are the parameters of every attention kernel, in order:
// q, k, v, o, heads, kv_heads, seq_q, seq_k, causal, scale·log2(e).
func KernelArgs(q, k, v, o gpu.Arg, shape sdk.Shape) []gpu.Arg {
	return append([]gpu.Arg{q, k, v, o}, attentionScalars(shape)...)
}

// AttentionParams are KernelArgs as a Launch's Params (the buffers q, k, v
// and o by name), for a plan whose kernel takes more after them, such as
// tensor maps (TensorMapParam).
func AttentionParams(shape sdk.Shape) []Param {
	params := []Param{BufferParam("q"), BufferParam("k"), BufferParam("v"), BufferParam("o")}
	for _, a := range attentionScalars(shape) {
		params = append(params, ValueParam(a))
	}
	return params
}

// attentionScalars are the scalars of the standard list: heads, kv_heads,
// seq_q, seq_k, causal, scale·log2(e).
func attentionScalars(shape sdk.Shape) []gpu.Arg {
	causal := int32(0)
	if shape.Causal {
		causal = 1
	}
	return []gpu.Arg{
		gpu.Int32(int32(shape.Heads)), gpu.Int32(int32(shape.KVHeads)),
		gpu.Int32(int32(shape.SeqQ)), gpu.Int32(int32(shape.SeqK)),
		gpu.Int32(causal), gpu.Float32(float32(shape.Scale() * math.Log2E)),
	}
}
