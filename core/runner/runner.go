package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
}

// ErrInterrupted is returned, wrapped, when the run's context ended early.
// The returned Run is still valid and has been saved with its rows so far.
var ErrInterrupted = errors.New("run interrupted")

// Run measures every case of the suite on every plugin. It returns the run
// even with an error, so that what was measured is never lost.
func Run(ctx context.Context, cfg Config) (*results.Run, error) {
	r := &runner{cfg: cfg, progress: cfg.Progress, writer: newWriter(cfg.ResultsPath)}
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

// runCase generates the case's inputs once, writes them for the plugins and
// runs every row on them.
func (r *runner) runCase(ctx context.Context, c suite.Case, dir string, rows []row) error {
	tensors := inputs.Generate(r.cfg.Suite.Seed, c)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("case %s: %w", c.ID, err)
	}
	defer os.RemoveAll(dir)
	files, err := inputs.WriteFiles(dir, tensors)
	if err != nil {
		return fmt.Errorf("case %s: write inputs: %w", c.ID, err)
	}
	r.run.Cases = append(r.run.Cases, caseRecord(c, tensors))
	for _, rw := range rows {
		if ctx.Err() != nil {
			return nil
		}
		res := r.runRow(ctx, rw, c, tensors, files)
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
	}
	return nil
}

func makeWorkDir(dir string) (string, error) {
	if dir == "" {
		dir = os.TempDir()
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			dir = "/dev/shm"
		}
	}
	return os.MkdirTemp(dir, "flashcore-run-")
}
