package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/suite"
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
	Progress io.Writer
	// HostOptions are passed to every plugin start.
	HostOptions host.Options
	// WorkDir holds the per-run tensor files; "" picks /dev/shm when it
	// exists, else the system temp directory.
	WorkDir string
	// OnResult, when set, is called with every row's result once it is
	// recorded and saved (the tuner keeps its state with it).
	OnResult func(results.Result) error
}

// ErrInterrupted is returned, wrapped, when the run's context ended early.
// The returned Run is still valid and has been saved with its rows so far.
var ErrInterrupted = errors.New("run interrupted")

// Run measures every case of the suite on every plugin. It returns the run
// even with an error, so that what was measured is never lost.
func Run(ctx context.Context, cfg Config) (*results.Run, error) {
	r := &runner{cfg: cfg, progress: cfg.Progress, writer: newWriter(cfg.ResultsPath), cpuCeilings: HostCPUCeilings()}
	if r.progress == nil {
		r.progress = io.Discard
	}
	r.run = newRun(cfg)
	defer r.closeBackends()

	r.startBackends(ctx)
	r.run.Environment.GPUs = gpusOf(r.backends)
	r.run.Environment.Driver, r.run.Environment.CUDA = driverVersions(devicesOf(r.backends))
	rows, err := plan(r.backends, cfg.Suite.Backends)
	if err != nil {
		return r.finish("failed", err)
	}
	workDir, err := makeWorkDir(cfg.WorkDir)
	if err != nil {
		return r.finish("failed", err)
	}
	defer os.RemoveAll(workDir)
	if err := r.save(); err != nil {
		return r.finish("failed", err)
	}
	for i, c := range cfg.Suite.Cases {
		if ctx.Err() != nil {
			break
		}
		if err := r.runCase(ctx, c, filepath.Join(workDir, fmt.Sprintf("case-%03d", i)), rows); err != nil {
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
	progress io.Writer
	writer   *results.Writer
	rowsDone int
	// cpuCeilings bound what a CPU backend can claim (plausible.go).
	cpuCeilings Ceilings
}

func newWriter(path string) *results.Writer {
	if path == "" {
		return nil
	}
	return results.NewWriter(path)
}

func (r *runner) save() error {
	if r.writer == nil {
		return nil
	}
	return r.writer.Save(r.run)
}

func (r *runner) finish(status string, err error) (*results.Run, error) {
	r.run.Status = status
	r.run.FinishedAt = time.Now().UTC()
	if saveErr := r.save(); saveErr != nil && err == nil {
		err = fmt.Errorf("save results: %w", saveErr)
	}
	return r.run, err
}

// caseInputs are one case's inputs as the host generated them, and the
// directory the rows' workspaces go in.
type caseInputs struct {
	tensors *inputs.Tensors
	hashes  inputHashes
	dir     string
}

// runCase generates the case's inputs once and runs every row on them,
// each row in a workspace of its own. Inputs are generated only when some
// row will run: a case every row skips (by declared capabilities, or for
// want of memory) costs nothing.
func (r *runner) runCase(ctx context.Context, c suite.Case, dir string, rows []row) error {
	r.run.Cases = append(r.run.Cases, caseRecord(c))
	var in *caseInputs
	for _, rw := range rows {
		if ctx.Err() != nil {
			return nil
		}
		rw = rw.forCase(c.ID)
		if in == nil && r.rowSkipReason(rw, c) == "" {
			var err error
			if in, err = prepareInputs(r.cfg.Suite.Seed, c, dir); err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			r.run.Cases[len(r.run.Cases)-1].InputSHA256 = in.tensors.SHA256
		}
		res := r.runRow(ctx, rw, c, in)
		if ctx.Err() != nil && res.Status == results.StatusError {
			// The row was cut short by the interrupt, not by the plugin.
			return nil
		}
		r.run.Results = append(r.run.Results, res)
		r.rowsDone++
		fmt.Fprintln(r.progress, progressLine(r.rowsDone, len(rows)*len(r.cfg.Suite.Cases), res))
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

// prepareInputs generates a case's inputs and makes its directory.
func prepareInputs(seed uint64, c suite.Case, dir string) (*caseInputs, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("case %s: %w", c.ID, err)
	}
	tensors := inputs.Generate(seed, c)
	return &caseInputs{tensors: tensors, hashes: hashTensors(tensors), dir: dir}, nil
}

func makeWorkDir(dir string) (string, error) {
	if dir == "" {
		dir = os.TempDir()
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			dir = "/dev/shm"
		}
	}
	removeAbandonedWorkDirs(dir)
	return os.MkdirTemp(dir, fmt.Sprintf("flashcore-run-%d-", os.Getpid()))
}

// removeAbandonedWorkDirs removes the work directories of earlier runs
// whose host is gone (killed before it could clean up: SIGKILL leaves no
// chance). A directory's name carries its host's process ID.
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
