package runner

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/flashcore/bench/core/devices"
	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/shard"
	"github.com/flashcore/bench/op"
)

// RunDevices spreads the suite over several GPUs of this host:
//
//  1. every plugin is described once, pinned to the first GPU, to learn
//     which backends measure on a GPU;
//  2. the GPU backends' (case, backend) pairs are dealt out by cost
//     (shard.Assign), one queue per GPU;
//  3. each GPU runs its queue in a run of its own, at the same time as the
//     others, with its own plugin processes pinned to it through
//     CUDA_VISIBLE_DEVICES; every row records the GPU it ran on. A GPU
//     whose plugins die or hang fails its own rows; the others go on;
//  4. the CPU backends run after, alone: run beside the GPU queues they
//     would share the host's cores with the GPUs' host threads, and their
//     times would be worth nothing;
//  5. the runs are combined into one (shard.Combine) and saved after every
//     row of any of them.
func RunDevices(ctx context.Context, cfg Config, gpus []results.RowDevice) (*results.Run, error) {
	if len(gpus) == 0 {
		return nil, fmt.Errorf("no GPU to run on")
	}
	onGPU, other := classify(ctx, cfg, gpus[0])
	saver := &combinedSaver{command: cfg.Command, shard: cfg.Shard}
	if cfg.ResultsPath != "" {
		saver.writer = results.NewWriter(cfg.ResultsPath)
	}
	progress := &lockedWriter{w: cfg.Progress}
	units := slices.DeleteFunc(shard.Units(cfg.Suite.Cases, pluginNames(onGPU)), func(u shard.Unit) bool {
		return cfg.Select != nil && !cfg.Select(u.Case, u.Backend)
	})
	queues := shard.Deal(units, len(gpus))
	var wg sync.WaitGroup
	errs := make([]error, len(gpus)+1)
	for i, gpu := range gpus {
		part := cfg
		// Queues run at once: one line per row to a shared writer, never
		// one live bar per queue.
		part.Plugins, part.Device, part.Progress, part.NewProgress = onGPU, &gpu, progress, nil
		part.HostOptions.Pin = append(slices.Clone(cfg.HostOptions.Pin), devices.PinEnv(gpu)...)
		part.Select = queueSelect(queues[i])
		part.Saver = saver.part(fmt.Sprintf("gpu %d", gpu.Index))
		wg.Go(func() { _, errs[i] = Run(ctx, part) })
	}
	wg.Wait()
	for i, gpu := range gpus {
		saver.failLost(i, gpu, queues[i], cfg)
	}
	if len(other) > 0 && ctx.Err() == nil {
		part := cfg
		part.Plugins, part.Progress, part.NewProgress, part.Saver = other, progress, nil, saver.part("cpu")
		_, errs[len(gpus)] = Run(ctx, part)
	}
	if ctx.Err() != nil {
		saver.status = results.RunInterrupted
	}
	run, err := saver.combined()
	if err != nil {
		return run, err
	}
	for _, e := range errs {
		if e != nil {
			return run, e
		}
	}
	return run, nil
}

// classify describes each plugin on gpu and splits them into those that
// measure on a GPU and the rest (CPU backends, unavailable ones).
func classify(ctx context.Context, cfg Config, gpu results.RowDevice) (onGPU, other []host.Plugin) {
	r := &runner{cfg: cfg}
	opts := r.hostOptions()
	opts.Pin = append(slices.Clone(opts.Pin), devices.PinEnv(gpu)...)
	for _, p := range cfg.Plugins {
		if d := Describe(ctx, p, opts); d.Available && d.Device.Kind == "gpu" {
			onGPU = append(onGPU, p)
		} else {
			other = append(other, p)
		}
	}
	return onGPU, other
}

func pluginNames(ps []host.Plugin) []string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return names
}

func queueSelect(units []shard.Unit) func(caseID, backend string) bool {
	sel := shard.Selection{}
	for _, u := range units {
		sel[[2]string{u.Case, u.Backend}] = true
	}
	return sel.Has
}

// combinedSaver keeps the latest state of each GPU's run and saves them,
// combined, as one file.
type combinedSaver struct {
	command string
	shard   *results.Shard
	// status, when set, is the combined run's status: an interrupt is
	// the whole run's, not one part's.
	status string
	writer *results.Writer
	mu     sync.Mutex
	names  []string
	parts  []*results.Run
}

type partSaver struct {
	s *combinedSaver
	i int
}

func (c *combinedSaver) part(name string) Saver {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.names = append(c.names, name)
	c.parts = append(c.parts, nil)
	return partSaver{c, len(c.parts) - 1}
}

// Save keeps a copy of the run's lists: the run goes on appending to them.
func (p partSaver) Save(run *results.Run) error {
	snapshot := *run
	snapshot.Backends = slices.Clone(run.Backends)
	snapshot.Cases = slices.Clone(run.Cases)
	snapshot.Results = slices.Clone(run.Results)
	p.s.mu.Lock()
	p.s.parts[p.i] = &snapshot
	p.s.mu.Unlock()
	_, err := p.s.save()
	return err
}

func (c *combinedSaver) save() (*results.Run, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var inputs []shard.Input
	for i, r := range c.parts {
		if r != nil {
			inputs = append(inputs, shard.Input{Source: c.names[i], Run: r})
		}
	}
	if len(inputs) == 0 {
		return nil, nil
	}
	run, _, err := shard.Combine(inputs, c.command)
	if err != nil {
		return nil, err
	}
	run.Shard = c.shard
	if c.status != "" {
		run.Status = c.status
	}
	if c.writer != nil {
		err = c.writer.Save(run)
	}
	return run, err
}

// failLost turns the queue of a GPU whose plugin never came up there into
// ERROR rows, so that a dead GPU shows in the table rather than as rows
// that are simply not there.
func (c *combinedSaver) failLost(i int, gpu results.RowDevice, queue []shard.Unit, cfg Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	run := c.parts[i]
	if run == nil {
		return
	}
	for _, u := range queue {
		j := slices.IndexFunc(run.Backends, func(b results.Backend) bool { return b.Name == u.Backend })
		if j < 0 || run.Backends[j].Available {
			continue
		}
		run.Backends[j].Fault = true
		if !slices.ContainsFunc(run.Cases, func(rc results.Case) bool { return rc.ID == u.Case }) {
			k := slices.IndexFunc(cfg.Suite.Cases, func(sc op.Case) bool { return sc.ID == u.Case })
			run.Cases = append(run.Cases, caseRecord(cfg.Suite.Cases[k]))
		}
		run.Results = append(run.Results, results.Result{CaseID: u.Case, Backend: u.Backend, Label: u.Backend,
			Status: results.StatusError, Device: &gpu,
			Reason: fmt.Sprintf("GPU %d (%s): the plugin did not come up on it: %s", gpu.Index, gpu.UUID, run.Backends[j].UnavailableReason)})
	}
}

// combined is the final run, saved once more.
func (c *combinedSaver) combined() (*results.Run, error) { return c.save() }

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		return len(p), nil
	}
	return l.w.Write(p)
}
