package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/progress"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
)

// Config is everything one run needs.
type Config struct {
	Suite   *suite.Suite
	Plugins []host.Plugin // the plugins to start, already chosen
	// ResultsPath is where the run is saved after every row; "" saves nothing.
	ResultsPath string
	Tool        results.Tool
	Command     string
	// Progress receives one line per row as it finishes; nil discards.
	// NewProgress, when set, is used instead.
	Progress io.Writer
	// NewProgress makes the Reporter that follows the run's rows, once
	// their number is known (a live bar on a terminal).
	NewProgress func(total int) progress.Reporter
	// HostOptions are passed to every plugin start.
	HostOptions host.Options
	// WorkDir holds the plugins' workspaces, with the per-run tensor files;
	// "" picks $TMPDIR when it is set, else /dev/shm when it exists, else
	// the system temp directory.
	WorkDir string
	// Select, when set, keeps only the (case, backend) pairs it returns
	// true for: a shard's slice, or one GPU's queue. A case with no pair
	// selected is left out of the run.
	Select func(caseID, backend string) bool
	// Shard is recorded in the run when it measures a slice of the suite.
	Shard *results.Shard
	// Device is the GPU every plugin of this run is pinned to (through
	// HostOptions.Pin); it is recorded on each row that ran.
	Device *results.RowDevice
	// Saver, when set, is given the run after every row instead of the
	// file at ResultsPath: the runs of several GPUs are saved as one.
	Saver Saver
	// OnResult, when set, is called with every row's result once it is
	// recorded and saved (the tuner keeps its state with it).
	OnResult func(results.Result) error
	// Budget bounds the time rows spend sampling (budget.go); zero for
	// none.
	Budget Budget
	// UnderProfiler says the run is a measuring session under a profiler
	// (ncu), whose own figures are not used: the host's clock check is
	// off there, since the profiler's serialisation and replays make every
	// honest call far slower than the kernel time it reports.
	UnderProfiler bool
	// FullReference is where the harness's fp32 reference of every row
	// runs, for the cases whose fp64 check samples rows: FullReferenceAuto
	// (also ""), FullReferenceGPU, FullReferenceCPU or FullReferenceOff.
	FullReference string
	// Python runs the fp32 reference where the suite names none: the
	// bridges' interpreter (bridge.Interpreter), which the caller knows.
	Python string
}

// Saver saves a run as it grows. It is called from the run's goroutine,
// and must not keep run's slices past the call, which the run appends to.
type Saver interface {
	Save(run *results.Run) error
}

// ErrInterrupted is returned, wrapped, when the run's context ended early.
// The returned Run is still valid and has been saved with its rows so far.
var ErrInterrupted = errors.New("run interrupted")

// Run measures every case of the suite on every plugin. It returns the run
// even with an error, so that what was measured is never lost.
func Run(ctx context.Context, cfg Config) (*results.Run, error) {
	r := &runner{cfg: cfg, saver: cfg.Saver, cpuCeilings: HostCPUCeilings(), started: time.Now()}
	if r.saver == nil && cfg.ResultsPath != "" {
		r.saver = results.NewWriter(cfg.ResultsPath)
	}
	r.run = newRun(cfg)
	r.run.Shard = cfg.Shard
	r.workDir = workRoot(cfg.WorkDir)
	defer r.stopAll()

	r.run.Environment.Isolation = host.CurrentIsolation().String()
	r.startFullReference()
	r.startBackends(ctx)
	r.run.Environment.GPUs = gpusOf(r.backends)
	r.run.Environment.Driver, r.run.Environment.CUDA = driverVersions(devicesOf(r.backends))
	rows, err := plan(r.backends, cfg.Suite.Backends)
	if err != nil {
		return r.finish("failed", err)
	}
	r.rowsPlanned = r.countPlanned(rows)
	r.progress = newProgress(cfg, r.rowsPlanned)
	defer r.progress.Close()
	if err := r.save(); err != nil {
		return r.finish("failed", err)
	}
	for i, c := range cfg.Suite.Cases {
		if ctx.Err() != nil {
			break
		}
		if err := r.runCase(ctx, c, fmt.Sprintf("case-%03d", i), rows); err != nil {
			return r.finish("failed", err)
		}
	}
	if ctx.Err() != nil {
		return r.finish("interrupted", fmt.Errorf("%w: %v", ErrInterrupted, context.Cause(ctx)))
	}
	return r.finish("complete", nil)
}

type runner struct {
	cfg      Config
	run      *results.Run
	backends []*backend
	progress progress.Reporter
	saver    Saver
	rowsDone int
	// rowsPlanned is the number of rows the run will take, for progress.
	rowsPlanned int
	// cpuCeilings bound what a CPU backend can claim (plausible.go).
	cpuCeilings Ceilings
	// workDir is where the plugins' workspaces are made, each with the
	// row workspaces in it: nothing of the run is anywhere else, so a
	// host killed by SIGKILL leaves nothing (the reapers remove the
	// workspaces).
	workDir string
	// rowStderr is the whole stderr of the plugin whose call failed the
	// row being finished, for settleText to keep in a file; "" otherwise.
	rowStderr string
	// clock splits the row being run into its steps (phases.go); nil
	// between rows.
	clock *rowClock
	// started is when the run began, for a suite's budget.
	started time.Time
	// full is the harness's fp32 reference of every row (fullref.go).
	full fullReference
	// stopped is set once the plugins and the reference have been stopped.
	stopped bool
}

// stopAll stops every plugin and the reference's process, once, and
// records how long that took: it is part of the run's wall time.
func (r *runner) stopAll() {
	if r.stopped {
		return
	}
	r.stopped = true
	start := time.Now()
	var wg sync.WaitGroup
	wg.Go(r.closeFullReference)
	wg.Go(r.closeBackends)
	wg.Wait()
	r.run.PluginStopNs = time.Since(start).Nanoseconds()
}

// newProgress is the config's Reporter for total rows: NewProgress's, else
// one line per row to Progress.
func newProgress(cfg Config, total int) progress.Reporter {
	if cfg.NewProgress != nil {
		return cfg.NewProgress(total)
	}
	return progress.Lines(cfg.Progress)
}

func (r *runner) save() error {
	if r.saver == nil {
		return nil
	}
	return r.saver.Save(r.run)
}

// selected reports whether the run takes rw's rows on case c.
func (r *runner) selected(c op.Case, rw row) bool {
	// A variant that does not run the case's op has no row for it: an
	// attention table shows no rmsnorm rows, and the other way round.
	if !ops.Supports(rw.variant, c.Op) {
		return false
	}
	return r.cfg.Select == nil || r.cfg.Select(c.ID, rw.backend.plugin.Name)
}

// caseRows are the rows the run takes on case c, as they run on it
// (caseRows of the selected rows).
func (r *runner) caseRows(c op.Case, rows []row) []row {
	return caseRows(c, slices.DeleteFunc(slices.Clone(rows), func(rw row) bool { return !r.selected(c, rw) }))
}

// countPlanned is how many rows the run will take over all cases.
func (r *runner) countPlanned(rows []row) int {
	n := 0
	for _, c := range r.cfg.Suite.Cases {
		n += len(r.caseRows(c, rows))
	}
	return n
}

func (r *runner) finish(status string, err error) (*results.Run, error) {
	r.run.Status = status
	r.recordCPUOutsideRows()
	r.stopAll()
	r.run.FinishedAt = time.Now().UTC()
	if saveErr := r.save(); saveErr != nil && err == nil {
		err = fmt.Errorf("save results: %w", saveErr)
	}
	return r.run, err
}

// caseInputs are one case's inputs as the host generated them, and the
// name of the directory its rows' workspaces go in, in each plugin's
// workspace (rowCaseDir).
type caseInputs struct {
	inputs *op.Inputs
	hashes inputHashes
	name   string
}

// runCase generates the case's inputs once and runs every row on them,
// each row in a workspace of its own. Inputs are generated only when some
// row will run: a case every row skips (by declared capabilities, or for
// want of memory) costs nothing.
func (r *runner) runCase(ctx context.Context, c op.Case, name string, rows []row) error {
	rows = r.caseRows(c, rows)
	if len(rows) == 0 {
		return nil
	}
	r.run.Cases = append(r.run.Cases, caseRecord(c))
	var in *caseInputs
	for _, rw := range rows {
		if ctx.Err() != nil {
			return nil
		}
		if in == nil && r.rowSkipReason(rw, c) == "" {
			generated := time.Now()
			in = prepareInputs(r.cfg.Suite.Seed, c, name)
			record := &r.run.Cases[len(r.run.Cases)-1]
			record.InputSHA256, record.InputsNs = in.inputs.SHA256, time.Since(generated).Nanoseconds()
			r.prepareFullReference(c, in.inputs, record)
		}
		r.progress.Begin(c.ID + " · " + rw.label)
		res := r.runRow(ctx, rw, c, in)
		if ctx.Err() != nil && res.Status == results.StatusError {
			// The row was cut short by the interrupt, not by the plugin.
			return nil
		}
		if res.Status != results.StatusSkip {
			res.Device = r.cfg.Device
		}
		r.settleText(&res)
		r.run.Results = append(r.run.Results, res)
		r.rowsDone++
		r.progress.Done(r.progressPrefix() + progressLine(r.rowsDone, r.rowsPlanned, res))
		if err := r.save(); err != nil {
			return fmt.Errorf("save results: %w", err)
		}
		if r.cfg.OnResult != nil {
			if err := r.cfg.OnResult(res); err != nil {
				return err
			}
		}
	}
	return nil
}

// prepareInputs generates a case's inputs; name is the case's directory
// name in each plugin's workspace.
func prepareInputs(seed uint64, c op.Case, name string) *caseInputs {
	in := ops.Of(c).Generate(seed, c)
	return &caseInputs{inputs: in, hashes: hashTensors(in), name: name}
}

// workRoot is the directory the plugins' workspaces go in: dir, else
// $TMPDIR when it is set, else /dev/shm (memory) where it exists, else the
// system's temporary directory.
func workRoot(dir string) string {
	if dir == "" {
		dir = os.TempDir()
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() && os.Getenv("TMPDIR") == "" {
			dir = "/dev/shm"
		}
	}
	removeAbandonedWorkDirs(dir)
	return dir
}

// removeAbandonedWorkDirs removes the work directories that runs of
// earlier versions left when their host was killed (SIGKILL leaves no
// chance to clean up). A directory's name carries its host's process ID.
func removeAbandonedWorkDirs(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "flashcore-run-")
		pid, _, ok2 := strings.Cut(rest, "-")
		n, err := strconv.Atoi(pid)
		if !ok || !ok2 || err != nil || n <= 0 || n == os.Getpid() {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", n)); errors.Is(err, fs.ErrNotExist) {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// progressPrefix names the GPU in progress lines of a run spread over several.
func (r *runner) progressPrefix() string {
	if r.cfg.Device == nil {
		return ""
	}
	return fmt.Sprintf("[gpu %d] ", r.cfg.Device.Index)
}
