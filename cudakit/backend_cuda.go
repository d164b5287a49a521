//go:build cuda

package cudakit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/sdk"
)

// clockSlots bounds how many spin clock readings a Run keeps; more than the
// contract's default MaxSamples.
const clockSlots = 4096

// Backend is the sdk.Backend of every CUDA plugin, configured by a Spec.
// New has no side effects: the CUDA context is created on the first call.
type Backend struct {
	spec Spec

	mu       sync.Mutex
	started  bool
	reason   string // why the backend is unavailable; "" when it is available
	lost     error  // set once the CUDA context is unusable
	manifest gpu.Manifest
	target   gpu.Target
	device   gpu.DeviceInfo

	worker  *gpu.Worker
	module  *gpu.Module            // the embedded fatbin (Spec.Kernel)
	images  map[string]*gpu.Module // images from Spec.Image, by key
	timer   *gpu.Timer
	startEv *gpu.Event
	stopEv  *gpu.Event
	kernels map[string]*kernel
	cases   map[string]*deviceCase
	spin    spinLengths
	// profiled is set when a profiler watches the plugin
	// (sdk.UnderProfilerEnv): every call of a Run is marked with NVTX
	// ranges (deviceCase.run).
	profiled bool
	// cuptiHeld says which tool holds CUPTI, so that the plugin times by
	// events: a profiler (profiled) or the tool the plugin was started
	// under (sdk.PluginWrapperEnv); "" when none.
	cuptiHeld string
	// referenced is set when flashcore verify-timing asks for a CUPTI
	// reference of the sampled calls (sdk.TimingReferenceEnv), and no
	// profiler holds CUPTI (device_timing_cuda.go).
	referenced bool
}

var (
	_ sdk.Backend = (*Backend)(nil)
	_ sdk.Closer  = (*Backend)(nil)
)

// New returns the backend of spec.
func New(spec Spec) *Backend {
	profiled := os.Getenv(sdk.UnderProfilerEnv) == "1"
	cuptiHeld := ""
	if wrapper := os.Getenv(sdk.PluginWrapperEnv); profiled {
		cuptiHeld = "a profiler holds CUPTI"
	} else if wrapper != "" {
		cuptiHeld = fmt.Sprintf("started under %q (%s): CUPTI is left to that tool", wrapper, sdk.PluginWrapperEnv)
	}
	return &Backend{
		spec:    spec,
		kernels: map[string]*kernel{},
		images:  map[string]*gpu.Module{},
		cases:   map[string]*deviceCase{},
		spin:    defaultSpinLengths(),

		profiled:   profiled,
		cuptiHeld:  cuptiHeld,
		referenced: os.Getenv(sdk.TimingReferenceEnv) == sdk.TimingReferenceCUPTI && !profiled,
	}
}

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
	facts           map[string]string

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
		c.steps[i].args = c.args(c.steps[i].launch)
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
	return errors.Join(errs...)
}

// Describe reports the backend, its device and its variant. It starts the
// backend on first use; any reason it cannot run makes it unavailable.
func (b *Backend) Describe(ctx context.Context) (sdk.Description, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.startOnce()
	d := baseDescription(b.spec)
	if b.manifest.SourceSHA256 != "" {
		d.Build = buildString(b.manifest)
	}
	if b.device.Name != "" {
		d.Device = deviceDescription(b.device)
	}
	switch {
	case b.reason != "":
		d.UnavailableReason = b.reason
	case b.lost != nil:
		d.UnavailableReason = b.lost.Error()
	default:
		d.Available = true
	}
	return d, nil
}

func (b *Backend) startOnce() {
	if b.started {
		return
	}
	b.started = true
	if err := b.start(); err != nil {
		b.reason = err.Error()
		b.shutdown()
	}
}

// start verifies the spec's ops and the embedded kernels before touching
// the GPU, so a stale fatbin is never loaded, then creates the context and
// loads everything.
func (b *Backend) start() error {
	if err := b.spec.CheckOps(); err != nil {
		return err
	}
	if b.spec.Image != nil {
		return b.startWithoutFatbin()
	}
	m, err := gpu.ParseManifest(b.spec.Kernel.Manifest)
	if err != nil {
		return err
	}
	if err := m.Verify(b.spec.Kernel.Fatbin, b.spec.Kernel.Sources); err != nil {
		return err
	}
	b.manifest = m
	if b.worker, err = gpu.NewWorker(0); err != nil {
		return err
	}
	b.device = b.worker.Device()
	if b.target, err = checkDevice(b.device, m, b.spec.Device); err != nil {
		return err
	}
	return b.worker.Do(func() error {
		var err error
		if b.module, err = gpu.LoadModule(b.spec.Kernel.Fatbin); err != nil {
			return err
		}
		return b.startTiming()
	})
}

// startWithoutFatbin starts a backend whose kernels come from Spec.Image:
// the context and the timing kernels now, the images at Prepare.
func (b *Backend) startWithoutFatbin() error {
	var err error
	if b.worker, err = gpu.NewWorker(0); err != nil {
		return err
	}
	b.device = b.worker.Device()
	if d := b.device; d.Major*10+d.Minor < MinComputeCapability {
		return fmt.Errorf("%s has compute capability %s; the timing kernels need %d.%d or newer",
			d.Name, d.ComputeCapability(), MinComputeCapability/10, MinComputeCapability%10)
	}
	return b.worker.Do(b.startTiming)
}

// startTiming creates the timing kernels and events, on the CUDA thread.
func (b *Backend) startTiming() error {
	var err error
	if b.timer, err = gpu.NewTimer(b.device, clockSlots); err != nil {
		return err
	}
	if b.startEv, err = gpu.NewEvent(); err != nil {
		return err
	}
	b.stopEv, err = gpu.NewEvent()
	return err
}

// usable starts the backend if needed and says why it cannot work.
func (b *Backend) usable() error {
	b.startOnce()
	if b.reason != "" {
		return fmt.Errorf("%s is unavailable: %s", b.spec.Name, b.reason)
	}
	return b.lost
}

// do runs fn on the CUDA thread and remembers a lost context: after a fault
// in a kernel every later call fails, and the host must restart the plugin.
func (b *Backend) do(fn func() error) error {
	err := b.worker.Do(fn)
	if gpu.IsContextLost(err) {
		b.lost = fmt.Errorf("CUDA context lost, the plugin must be restarted: %w", err)
	}
	return err
}

func (b *Backend) preparedCase(id string) (*deviceCase, error) {
	if err := b.usable(); err != nil {
		return nil, err
	}
	c, ok := b.cases[id]
	if !ok {
		return nil, fmt.Errorf("case %s is not prepared", id)
	}
	return c, nil
}

// Prepare checks the case, reads and hashes its inputs, and uploads them.
// A case the plugin cannot run (an op it does not run, a shape outside the
// capabilities, a plan it has not) comes back as an Unsupported
// diagnostic, before anything is read or allocated.
func (b *Backend) Prepare(ctx context.Context, req sdk.PrepareRequest) (sdk.Prepared, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.usable(); err != nil {
		return sdk.Prepared{}, err
	}
	if _, ok := b.cases[req.CaseID]; ok {
		return sdk.Prepared{}, fmt.Errorf("case %s is already prepared", req.CaseID)
	}
	if req.Variant != "" && req.Variant != b.spec.Variant.Name {
		return unsupported("%s has no variant %q (it has %s)", b.spec.Name, req.Variant, b.spec.Variant.Name), nil
	}
	if reason := b.spec.notServed(req); reason != "" {
		return unsupported("%s", reason), nil
	}
	tunables, err := sdk.ResolveTunables(b.spec.Variant.Tunables, req.Tunables)
	if err != nil {
		return unsupported("%v", err), nil
	}
	p, reason, err := b.spec.plan(req, tunables)
	switch {
	case err != nil:
		return sdk.Prepared{}, fmt.Errorf("prepare %s: %w", req.CaseID, err)
	case reason != "":
		return unsupported("%s", reason), nil
	}
	image, err := b.image(tunables)
	if err != nil {
		return sdk.Prepared{}, fmt.Errorf("prepare %s: %w", req.CaseID, err)
	}
	in, err := readTensors(p.inputs)
	if err != nil {
		return sdk.Prepared{}, fmt.Errorf("prepare %s: %w", req.CaseID, err)
	}
	var c *deviceCase
	err = b.do(func() error {
		steps, facts, why, err := b.steps(image, p.launch)
		if err != nil || why != "" {
			reason = why
			return err
		}
		c, err = b.upload(p, steps, in)
		if err != nil {
			return err
		}
		c.facts = mergeFacts(b.buildFacts(image), facts, tunableFacts(tunables), scratchFacts(p.launch))
		return nil
	})
	switch {
	case gpu.IsOutOfMemory(err):
		var outputs int64
		for _, t := range p.outputs {
			outputs += t.bytes
		}
		return sdk.Prepared{}, fmt.Errorf("out of memory: case %s needs %d bytes of device memory for %s and %d of scratch: %w",
			req.CaseID, in.bytes()+outputs, p.tensorLabels(), p.launch.ScratchBytes(), err)
	case err != nil:
		return sdk.Prepared{}, fmt.Errorf("prepare %s: %w", req.CaseID, err)
	case reason != "":
		return unsupported("%s", reason), nil
	}
	c.caseID, c.label = req.CaseID, sdk.RowLabel(cmp.Or(req.Variant, b.spec.Variant.Name), req.Tunables)
	b.cases[req.CaseID] = c
	return sdk.Prepared{LoadedSHA256: in.sha256, Facts: c.facts}, nil
}

// image is the Spec.Image for the case's tunables, or nil where the
// kernels are the embedded fatbin. It runs off the CUDA thread: a compile
// may take seconds.
func (b *Backend) image(tunables map[string]string) (*Image, error) {
	if b.spec.Image == nil {
		return nil, nil
	}
	img, err := b.spec.Image(b.device, tunables)
	if err != nil {
		return nil, err
	}
	return &img, nil
}

// buildFacts are the facts of the code that runs: the embedded fatbin's
// manifest, or the image's own.
func (b *Backend) buildFacts(img *Image) map[string]string {
	if img != nil {
		return maps.Clone(img.Facts)
	}
	return buildFacts(b.manifest, b.target)
}

// steps looks up, fits and describes every kernel of the launch, on the
// CUDA thread. A launch that cannot fit comes back as a reason.
func (b *Backend) steps(img *Image, l Launch) ([]step, map[string]string, string, error) {
	module, key, err := b.moduleFor(img)
	if err != nil {
		return nil, nil, "", err
	}
	var steps []step
	facts := map[string]string{}
	for i, sl := range l.Steps() {
		k, err := b.kernel(module, key, img.Symbol(sl.Function))
		if err != nil {
			return nil, nil, "", err
		}
		occupancy, why, err := b.fit(k, sl)
		if err != nil || why != "" {
			return nil, nil, why, err
		}
		steps = append(steps, step{launch: sl, kernel: k})
		prefix := ""
		if i > 0 {
			prefix = fmt.Sprintf("%s%d.", FactStepPrefix, i+1)
		}
		for name, value := range launchFacts(sl, k.res, occupancy) {
			facts[prefix+name] = value
		}
	}
	if len(steps) > 1 {
		names := make([]string, len(steps))
		for i, s := range steps {
			names[i] = s.launch.Function
		}
		facts[FactKernelFunction] = strings.Join(names, " + ")
	}
	return steps, facts, "", nil
}

// moduleFor is the module that holds the kernels: the embedded fatbin, or
// the image, loaded once per key.
func (b *Backend) moduleFor(img *Image) (*gpu.Module, string, error) {
	if img == nil {
		return b.module, "", nil
	}
	if m, ok := b.images[img.Key]; ok {
		return m, img.Key, nil
	}
	m, err := gpu.LoadModule(img.Data)
	if err != nil {
		return nil, "", err
	}
	b.images[img.Key] = m
	return m, img.Key, nil
}

// kernel looks a function up once per module and caches it with its
// resources.
func (b *Backend) kernel(module *gpu.Module, key, name string) (*kernel, error) {
	id := key + "\x00" + name
	if k, ok := b.kernels[id]; ok {
		return k, nil
	}
	fn, err := module.Function(name)
	if err != nil {
		return nil, err
	}
	res, err := fn.Resources()
	if err != nil {
		return nil, err
	}
	k := &kernel{fn: fn, res: res}
	b.kernels[id] = k
	return k, nil
}

// fit checks the launch against the kernel and the device, opts the kernel
// in to the dynamic shared memory it needs, and returns its occupancy. A
// launch that cannot fit comes back as a reason, not an error.
func (b *Backend) fit(k *kernel, l Launch) (blocksPerSM int, reason string, err error) {
	if threads := l.Block.Threads(); threads > k.res.MaxThreadsPerBlock {
		return 0, fmt.Sprintf("%s needs %d threads per block; the device allows %d for it",
			l.Function, threads, k.res.MaxThreadsPerBlock), nil
	}
	if shared := k.res.StaticSharedBytes + l.DynamicSharedBytes; shared > b.device.MaxSharedPerBlockOptin {
		return 0, fmt.Sprintf("%s needs %d bytes of shared memory per block; %s allows %d",
			l.Function, shared, b.device.Name, b.device.MaxSharedPerBlockOptin), nil
	}
	if l.DynamicSharedBytes > k.sharedAllowed {
		if err := k.fn.SetMaxDynamicSharedBytes(l.DynamicSharedBytes); err != nil {
			return 0, "", err
		}
		k.sharedAllowed = l.DynamicSharedBytes
	}
	blocksPerSM, err = k.fn.BlocksPerSM(l.Block.Threads(), l.DynamicSharedBytes)
	if err != nil {
		return 0, "", err
	}
	if blocksPerSM == 0 {
		return 0, fmt.Sprintf("%s with %d threads and %d bytes of dynamic shared memory does not fit on an SM",
			l.Function, l.Block.Threads(), l.DynamicSharedBytes), nil
	}
	return blocksPerSM, "", nil
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
		c.steps[i].args = c.args(c.steps[i].launch)
	}
	return c, nil
}

// args lays out the parameters of one step (see Launch.Params).
func (c *deviceCase) args(l Launch) []gpu.Arg {
	a := caseArgs{attention: c.attention}
	for _, t := range slices.Concat(c.inputs, c.outputs) {
		a.tensors = append(a.tensors, namedArg{t.name, t.buf.Arg()})
	}
	for i, s := range c.launch.Scratch {
		a.scratch = append(a.scratch, namedArg{s.Name, c.scratch[i].Arg()})
	}
	return a.args(l)
}

// Fetch poisons every output, runs the case once and writes each output to
// its file.
func (b *Backend) Fetch(ctx context.Context, req sdk.FetchRequest) (sdk.Fetched, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, err := b.preparedCase(req.CaseID)
	if err != nil {
		return sdk.Fetched{}, err
	}
	var out [][]byte
	err = b.do(func() error {
		if err := c.poisonOutputs(); err != nil {
			return err
		}
		if err := c.run(); err != nil {
			return err
		}
		out, err = c.downloadOutputs()
		return err
	})
	if err != nil {
		return sdk.Fetched{}, fmt.Errorf("fetch %s: %w", req.CaseID, err)
	}
	for i, t := range c.outputs {
		if err := writeOutput(t.path, out[i]); err != nil {
			return sdk.Fetched{}, fmt.Errorf("fetch %s: %w", req.CaseID, err)
		}
	}
	return sdk.Fetched{}, nil
}

// Run takes kernel-time samples under the measurement contract, then
// call-time samples (see sampler).
func (b *Backend) Run(ctx context.Context, req sdk.RunRequest) (sdk.Samples, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, err := b.preparedCase(req.CaseID)
	if err != nil {
		return sdk.Samples{}, err
	}
	paths, err := timedOutputPaths(req, c.outputNames())
	if err != nil {
		return sdk.Samples{}, fmt.Errorf("run %s: %w", req.CaseID, err)
	}
	s := &sampler{b: b, c: c, cold: req.Measurement.L2 == sdk.L2Cold}
	c.marking = b.profiled
	defer func() { c.marking = false }()
	var samples sdk.Samples
	var timedOutputs [][]byte
	err = b.do(func() error {
		if len(paths) > 0 {
			// Poisoned before the first run, so a timed launch that
			// writes nothing leaves poison for the host to find.
			if err := c.poisonOutputs(); err != nil {
				return err
			}
		}
		var err error
		if samples, err = s.collect(ctx, req.Measurement); err != nil || len(paths) == 0 {
			return err
		}
		timedOutputs, err = c.downloadOutputs()
		return err
	})
	switch {
	case gpu.IsOutOfMemory(err):
		return sdk.Samples{}, fmt.Errorf("out of memory: run %s: %w", req.CaseID, err)
	case err != nil:
		return sdk.Samples{}, fmt.Errorf("run %s: %w", req.CaseID, err)
	}
	for i, path := range paths {
		if err := writeOutput(path, timedOutputs[i]); err != nil {
			return sdk.Samples{}, fmt.Errorf("run %s: %w", req.CaseID, err)
		}
	}
	return samples, nil
}

// Release frees the case. Releasing an unknown case does nothing.
func (b *Backend) Release(ctx context.Context, req sdk.ReleaseRequest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.cases[req.CaseID]
	if !ok {
		return nil
	}
	delete(b.cases, req.CaseID)
	if b.lost != nil {
		return nil // the memory goes with the context
	}
	if err := b.do(c.free); err != nil {
		return fmt.Errorf("release %s: %w", req.CaseID, err)
	}
	return nil
}

// Close frees every case and destroys the context.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.shutdown()
}

func (b *Backend) shutdown() error {
	if b.worker == nil {
		return nil
	}
	var errs []error
	if b.lost == nil {
		errs = append(errs, b.worker.Do(func() error {
			var errs []error
			for _, id := range slices.Sorted(maps.Keys(b.cases)) {
				errs = append(errs, b.cases[id].free())
			}
			if b.timer != nil {
				errs = append(errs, b.timer.Close())
			}
			errs = append(errs, b.startEv.Destroy(), b.stopEv.Destroy())
			if b.module != nil {
				errs = append(errs, b.module.Unload())
			}
			for _, key := range slices.Sorted(maps.Keys(b.images)) {
				errs = append(errs, b.images[key].Unload())
			}
			return errors.Join(errs...)
		}))
	}
	errs = append(errs, b.worker.Close())
	b.worker, b.module, b.timer, b.startEv, b.stopEv = nil, nil, nil, nil, nil
	clear(b.cases)
	clear(b.kernels)
	clear(b.images)
	return errors.Join(errs...)
}
