package runner

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/sdk"
)

// backend is one plugin during a run: its description and, while it is
// alive, its process.
type backend struct {
	plugin      host.Plugin
	instance    *host.Instance
	description sdk.Description
	// fault is set when the plugin could not start or describe itself
	// because it misbehaved, not because the machine lacks something.
	fault bool
	// cpuOutsideRows is the CPU time its plugin used while other
	// backends' rows ran, read from its cgroup (isolation.go).
	cpuOutsideRows time.Duration
	cpuRead        bool // cpuOutsideRows was read at least once
	// stderrMark is how much the plugin had written to stderr when the
	// current row began: what it writes after is that row's.
	stderrMark int64
	// startTime is the host's time of the plugin's start and Describe at
	// the run's beginning; stopTime, of its stop at the run's end.
	startTime, stopTime time.Duration
}

// startBackends starts and describes every plugin, all at once: a
// plugin's start is mostly its own waiting (a Python worker importing
// torch, a CUDA context), which overlaps. A plugin that cannot start or
// describe itself is recorded as unavailable with the reason; it never
// stops the run.
func (r *runner) startBackends(ctx context.Context) {
	var wg sync.WaitGroup
	for _, p := range r.cfg.Plugins {
		b := &backend{plugin: p}
		r.backends = append(r.backends, b)
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			b.description = r.describe(ctx, b)
			b.startTime = time.Since(start)
		}()
	}
	wg.Wait()
	var instances []*host.Instance
	for _, b := range r.backends {
		instances = append(instances, b.instance)
	}
	r.run.Environment.Isolation = host.CurrentIsolation().WithUserNotes(instances).String()
	refuseImpostors(r.backends)
	for _, b := range r.backends {
		if !b.description.Available && b.instance != nil {
			r.stop(b)
		}
		r.run.Backends = append(r.run.Backends, backendRecord(b))
	}
}

func (r *runner) describe(ctx context.Context, b *backend) sdk.Description {
	if err := r.ensureStarted(ctx, b); err != nil {
		se, ok := host.IsStartError(err)
		b.fault = ctx.Err() == nil && !(ok && se.Unavailable)
		return unavailable(b.plugin.Name, err)
	}
	callCtx, cancel := context.WithTimeout(ctx, r.cfg.Suite.CallTimeout)
	defer cancel()
	desc, err := b.instance.Backend().Describe(callCtx)
	if err != nil {
		b.fault = ctx.Err() == nil
		r.restart(b)
		return unavailable(b.plugin.Name, fmt.Errorf("describe: %w", err))
	}
	if desc.Name == "" {
		desc.Name = b.plugin.Name
	}
	if !desc.Available {
		r.stop(b)
	}
	return desc
}

// Describe starts p, asks it to describe itself and stops it. It is what
// `flashcore list` and `flashcore describe` use.
func Describe(ctx context.Context, p host.Plugin, opts host.Options) sdk.Description {
	r := &runner{cfg: Config{HostOptions: opts}}
	b := &backend{plugin: p}
	if err := r.ensureStarted(ctx, b); err != nil {
		return unavailable(p.Name, err)
	}
	defer r.stop(b)
	desc, err := b.instance.Backend().Describe(ctx)
	if err != nil {
		return unavailable(p.Name, fmt.Errorf("describe: %w", err))
	}
	desc.Name = p.Name // the host's name, whatever the plugin says
	return desc
}

func unavailable(name string, err error) sdk.Description {
	reason := err.Error()
	if se, ok := host.IsStartError(err); ok {
		reason = se.Reason
	}
	return sdk.Description{Name: name, Available: false, UnavailableReason: reason}
}

// ensureStarted (re)starts the plugin when it is not running: after a crash,
// a hang or a transport error the next case gets a fresh process.
func (r *runner) ensureStarted(ctx context.Context, b *backend) error {
	if b.instance != nil && !b.instance.Exited() {
		return nil
	}
	b.instance = nil
	inst, err := host.Start(ctx, b.plugin, r.hostOptions())
	if err != nil {
		return err
	}
	b.instance = inst
	return nil
}

func (r *runner) hostOptions() host.Options {
	opts := r.cfg.HostOptions
	if opts.StartTimeout == 0 && r.cfg.Suite != nil {
		opts.StartTimeout = r.cfg.Suite.StartTimeout
	}
	if opts.ScratchRoot == "" {
		opts.ScratchRoot = r.workDir
	}
	if r.cfg.Suite != nil && r.cfg.Suite.Python != "" {
		opts.Env = append(append([]string(nil), opts.Env...), "FLASHCORE_PYTHON="+r.cfg.Suite.Python)
	}
	return opts
}

// restart kills a plugin whose state can no longer be trusted; the next
// row starts it again.
func (r *runner) restart(b *backend) {
	if b.instance != nil {
		b.instance.Kill()
		b.instance = nil
	}
}

func (r *runner) stop(b *backend) {
	if b.instance != nil {
		b.instance.Close()
		b.instance = nil
	}
}

// closeBackends stops every plugin, all at once: a plugin's stop is
// mostly its own waiting (a Python worker's exit, a CUDA context's
// teardown), as its start is.
func (r *runner) closeBackends() {
	r.thawAll()
	var wg sync.WaitGroup
	for _, b := range r.backends {
		if b.instance == nil {
			continue
		}
		wg.Go(func() {
			start := time.Now()
			r.stop(b)
			b.stopTime = time.Since(start)
		})
	}
	wg.Wait()
	for i, b := range r.backends {
		if i < len(r.run.Backends) && b.stopTime > 0 {
			r.run.Backends[i].StopNs = b.stopTime.Nanoseconds()
		}
	}
}

func backendRecord(b *backend) results.Backend {
	d := b.description
	return results.Backend{
		Name:              b.plugin.Name,
		Version:           d.Version,
		Build:             d.Build,
		Path:              b.plugin.Path,
		Available:         d.Available,
		UnavailableReason: d.UnavailableReason,
		Fault:             b.fault,
		Device:            d.Device,
		Variants:          d.Variants,
		StartNs:           b.startTime.Nanoseconds(),
	}
}

// driverVersions picks the driver version (e.g. "580.159.04", as NVML
// tells the Python bridges) and the CUDA version the driver supports (e.g.
// "13.0", as the CUDA plugins write "CUDA 13.0") out of the backends' GPU
// descriptions; either is "" when no backend said.
func driverVersions(gpus []sdk.Device) (driver, cuda string) {
	for _, d := range gpus {
		if v, ok := strings.CutPrefix(d.Driver, "CUDA "); ok {
			cuda = cmp.Or(cuda, v)
		} else if d.Driver != "" {
			driver = cmp.Or(driver, d.Driver)
		}
	}
	return driver, cuda
}

func devicesOf(backends []*backend) []sdk.Device {
	devices := make([]sdk.Device, len(backends))
	for i, b := range backends {
		devices[i] = b.description.Device
	}
	return devices
}

// gpusOf lists the distinct GPUs the backends reported.
func gpusOf(backends []*backend) []sdk.Device {
	var gpus []sdk.Device
	seen := map[string]bool{}
	for _, b := range backends {
		d := b.description.Device
		if d.Kind == "gpu" && d.Name != "" && !seen[d.Name] {
			seen[d.Name] = true
			gpus = append(gpus, d)
		}
	}
	return gpus
}
