//go:build cuda

package cudakit

import (
	"context"
	"fmt"
	"os"
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
	_ sdk.Backend    = (*Backend)(nil)
	_ sdk.Closer     = (*Backend)(nil)
	_ sdk.ExitCloser = (*Backend)(nil)
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
