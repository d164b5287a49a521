//go:build cuda

package cudakit

import (
	"errors"
	"fmt"
	"slices"

	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/sdk"
)

// kernel is a loaded kernel function and what the driver says about it.
type kernel struct {
	fn            *gpu.Function
	res           gpu.FuncResources
	sharedAllowed int // dynamic shared memory the function has opted in to
}

// deviceCase is one prepared case: its buffers, launches and facts.
type deviceCase struct {
	attention *sdk.Shape // the shape of an attention case; nil for other ops
	launch    Launch
	steps     []step
	// inputs and outputs are the case's tensors in the request's order
	// (Q, K, V and O for attention), each with its device buffer.
	inputs, outputs []deviceTensor
	scratch         []*gpu.Buffer // in the order of launch.Scratch
	resets          []reset       // what is reset before every call
	// maps hold the tensor maps the steps' parameters ask for
	// (TensorMapParam), by step and parameter index: each its own 128-byte
	// buffer, written again whenever the buffers move, never moved itself.
	maps  map[[2]int]*gpu.Buffer
	facts map[string]string

	// For a profiler: the row's case and label, whether calls are marked
	// now (during a Run under a profiler), and how many were, numbered on
	// across Runs (sdk.CallRange).
	caseID, label string
	marking       bool
	calls         int
}

// deviceTensor is one tensor of a case and the device buffer that holds it.
type deviceTensor struct {
	tensor
	buf *gpu.Buffer
}

// step is one kernel launch of a call, with its parameters laid out.
type step struct {
	launch Launch
	kernel *kernel
	args   []gpu.Arg
}

// reset is a buffer set to word before every call.
type reset struct {
	buf  *gpu.Buffer
	word uint32
}

// run is one call: reset what the plan resets, then launch every step;
// inside the profiler's NVTX ranges while marking.
func (c *deviceCase) run() error {
	if c.marking {
		c.calls++
		gpu.PushRange(sdk.ProfilerOuterRange)
		gpu.PushRange(sdk.CallRange(c.caseID, c.label, c.calls))
		defer gpu.PopRange()
		defer gpu.PopRange()
	}
	for _, r := range c.resets {
		if err := r.buf.FillWords(r.word); err != nil {
			return err
		}
	}
	for _, s := range c.steps {
		if err := s.kernel.fn.Launch(s.launch.Grid, s.launch.Block, s.launch.DynamicSharedBytes, s.args...); err != nil {
			return err
		}
	}
	return nil
}

// activitiesPerCall is how many device activities run launches: a memset
// per reset buffer, then the plan's kernels.
func (c *deviceCase) activitiesPerCall() int { return len(c.resets) + len(c.steps) }

// buffers are the case's device buffers, for changing in place: every
// input, every output, then the scratch.
func (c *deviceCase) buffers() []**gpu.Buffer {
	var bufs []**gpu.Buffer
	for _, ts := range [][]deviceTensor{c.inputs, c.outputs} {
		for i := range ts {
			bufs = append(bufs, &ts[i].buf)
		}
	}
	return append(bufs, pointersTo(c.scratch)...)
}

// poisonOutputs fills every output with sdk.PoisonByte, so that an element
// the next call does not write is found as unwritten.
func (c *deviceCase) poisonOutputs() error {
	for _, t := range c.outputs {
		if err := t.buf.Fill(sdk.PoisonByte); err != nil {
			return err
		}
	}
	return nil
}

// outputNames are the names of the case's outputs, in order.
func (c *deviceCase) outputNames() []string {
	names := make([]string, len(c.outputs))
	for i, t := range c.outputs {
		names[i] = t.name
	}
	return names
}

// downloadOutputs copies every output to the host, after the stream's work.
func (c *deviceCase) downloadOutputs() ([][]byte, error) {
	if err := gpu.Synchronize(); err != nil {
		return nil, err
	}
	out := make([][]byte, len(c.outputs))
	for i, t := range c.outputs {
		out[i] = make([]byte, t.buf.Size())
		if err := t.buf.Download(out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// moveBuffers gives the case new device buffers with the old ones' contents
// and frees the old ones; on failure the case keeps its old buffers.
func (c *deviceCase) moveBuffers() (err error) {
	olds := c.buffers()
	news := make([]*gpu.Buffer, 0, len(olds))
	defer func() {
		if err != nil {
			for _, b := range news {
				b.Free()
			}
		}
	}()
	for _, old := range olds {
		b, err := gpu.Alloc((*old).Size())
		if err != nil {
			return err
		}
		news = append(news, b)
		if err := b.CopyFrom(*old); err != nil {
			return err
		}
	}
	if err := gpu.Synchronize(); err != nil {
		return err
	}
	moved := make(map[*gpu.Buffer]*gpu.Buffer, len(olds))
	var errs []error
	for i, old := range olds {
		moved[*old] = news[i]
		errs = append(errs, (*old).Free())
		*old = news[i]
	}
	for i := range c.resets {
		c.resets[i].buf = moved[c.resets[i].buf]
	}
	for i := range c.steps {
		if c.steps[i].args, err = c.args(i); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
	return errors.Join(errs...)
}

func pointersTo(bufs []*gpu.Buffer) []**gpu.Buffer {
	ps := make([]**gpu.Buffer, len(bufs))
	for i := range bufs {
		ps[i] = &bufs[i]
	}
	return ps
}

// free frees every buffer the case holds; it is called on a case whose
// upload stopped half-way too, where some are still nil.
func (c *deviceCase) free() error {
	var errs []error
	for _, b := range c.buffers() {
		errs = append(errs, (*b).Free())
	}
	for _, b := range c.maps {
		errs = append(errs, b.Free())
	}
	return errors.Join(errs...)
}

// upload allocates the case's buffers, each tensor's of the size its
// declaration gives, copies the inputs in, poisons the scratch that is not
// zeroed, and lays out every step's parameters.
func (b *Backend) upload(p planned, steps []step, in inputs) (c *deviceCase, err error) {
	l := p.launch
	c = &deviceCase{attention: p.attention, launch: l, steps: steps}
	defer func() {
		if err != nil {
			c.free()
			c = nil
		}
	}()
	for _, t := range p.inputs {
		c.inputs = append(c.inputs, deviceTensor{tensor: t})
	}
	for _, t := range p.outputs {
		c.outputs = append(c.outputs, deviceTensor{tensor: t})
	}
	for _, ts := range [][]deviceTensor{c.inputs, c.outputs} {
		for i := range ts {
			if ts[i].buf, err = gpu.Alloc(ts[i].bytes); err != nil {
				return nil, err
			}
		}
	}
	for i, t := range c.inputs {
		if err = t.buf.Upload(in.data[i]); err != nil {
			return nil, err
		}
	}
	for _, s := range l.Scratch {
		buf, err := gpu.Alloc(s.Bytes)
		if err != nil {
			return nil, err
		}
		c.scratch = append(c.scratch, buf)
		if s.Reset {
			c.resets = append(c.resets, reset{buf, s.Word})
		} else if err := buf.Fill(sdk.PoisonByte); err != nil {
			return nil, err
		}
	}
	if l.OutputReset {
		for _, t := range c.outputs {
			c.resets = append(c.resets, reset{t.buf, l.OutputWord})
		}
	}
	for i := range c.steps {
		if c.steps[i].args, err = c.args(i); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// args lays out the parameters of step i (see Launch.Params), encoding
// and writing its tensor maps for the buffers' present addresses.
func (c *deviceCase) args(i int) ([]gpu.Arg, error) {
	l := c.steps[i].launch
	a := caseArgs{attention: c.attention}
	buffers := map[string]*gpu.Buffer{}
	for _, t := range slices.Concat(c.inputs, c.outputs) {
		a.tensors = append(a.tensors, namedArg{t.name, t.buf.Arg()})
		buffers[t.name] = t.buf
	}
	for j, s := range c.launch.Scratch {
		a.scratch = append(a.scratch, namedArg{s.Name, c.scratch[j].Arg()})
		buffers[s.Name] = c.scratch[j]
	}
	args := a.args(l)
	for j, p := range l.Params {
		m := p.TensorMap
		if m == nil {
			continue
		}
		encoded, err := gpu.EncodeTensorMap(buffers[m.Buffer], m.DType.Size(), m.DType == sdk.BF16, m.Dims, m.Box)
		if err != nil {
			return nil, fmt.Errorf("%s, parameter %d (a tensor map of %s): %w", l.Function, j, m.Buffer, err)
		}
		at := [2]int{i, j}
		if c.maps[at] == nil {
			b, err := gpu.Alloc(gpu.TensorMapBytes)
			if err != nil {
				return nil, err
			}
			if c.maps == nil {
				c.maps = map[[2]int]*gpu.Buffer{}
			}
			c.maps[at] = b
		}
		if err := c.maps[at].Upload(encoded[:]); err != nil {
			return nil, err
		}
		args[j] = c.maps[at].Arg()
	}
	return args, nil
}
