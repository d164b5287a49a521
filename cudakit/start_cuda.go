//go:build cuda

package cudakit

import (
	"fmt"
	"maps"

	"github.com/flashcore/bench/cudakit/gpu"
)

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
	if b.stopEv, err = gpu.NewEvent(); err != nil {
		return err
	}
	b.startActivityTrace()
	return nil
}

// startActivityTrace starts CUPTI's activity records as the plugin
// starts, where its Runs will time by them (no tool holds CUPTI): the
// plugins start side by side, and a CUDA plugin is ready well before the
// Python workers, so the start costs no wall time here, where it made the
// plugin's first warm-up 33-40 ms instead of 13-19 (an H200 machine). A
// CUPTI that will not start is kept (gpu.StartActivityTrace) and said by
// that Run, which times by events.
func (b *Backend) startActivityTrace() {
	if b.cuptiHeld == "" {
		_, _ = gpu.StartActivityTrace()
	}
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
