package tune

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/op"
)

// Evaluator measures configurations on a case. It calls done once per
// configuration it finished, in order, and may stop early when ctx ends;
// configurations without a call to done count as not evaluated.
type Evaluator interface {
	Evaluate(ctx context.Context, c op.Case, configs []Config, done func(Evaluation) error) error
}

// Job is one tuning run: the space, the cases and the budget.
type Job struct {
	Space Space
	Cases []op.Case
	// Budget is the number of evaluations per case, counting those of the
	// state resumed from.
	Budget    int
	Evaluator Evaluator
	// Save is called after every evaluation and every new generation.
	Save func(*State) error
	// Progress receives a line per generation; nil discards.
	Progress io.Writer
}

// ErrNoProgress is returned when an evaluator finished a batch without a
// single result, which would otherwise repeat forever.
var ErrNoProgress = errors.New("the backend returned no result for any candidate")

// Tune searches each case in turn until its budget is spent or its space is
// exhausted. It returns ctx's error when ctx ends; the state is saved
// and holds every evaluation that finished.
func Tune(ctx context.Context, st *State, job Job) error {
	if job.Progress == nil {
		job.Progress = io.Discard
	}
	for _, c := range job.Cases {
		s, err := st.search(c.ID)
		if err != nil {
			return err
		}
		if err := tuneCase(ctx, st, s, c, job); err != nil {
			return err
		}
	}
	return nil
}

func tuneCase(ctx context.Context, st *State, s *Search, c op.Case, job Job) error {
	for len(s.Evaluations) < job.Budget && !s.Exhausted {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(s.Pending) == 0 {
			if err := s.draw(job.Space.For(c.Op), st.Settings); err != nil {
				return err
			}
			if err := job.Save(st); err != nil {
				return err
			}
			if !s.Exhausted {
				fmt.Fprintf(job.Progress, "tune %s: generation %d, %d candidate(s), %d of %d evaluations done\n",
					c.ID, s.Generation-1, len(s.Pending), len(s.Evaluations), job.Budget)
			}
			continue
		}
		batch := s.Pending[:min(len(s.Pending), job.Budget-len(s.Evaluations))]
		batch = append([]Config(nil), batch...)
		before := len(s.Evaluations)
		err := job.Evaluator.Evaluate(ctx, c, batch, func(e Evaluation) error {
			if err := s.record(e); err != nil {
				return err
			}
			return job.Save(st)
		})
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(s.Evaluations) == before {
			return fmt.Errorf("case %s: %w", c.ID, ErrNoProgress)
		}
	}
	return nil
}

// BestTuned is the best configuration of every case that has one, in the
// file format suites read.
func BestTuned(st *State, space Space) *suite.Tuned {
	t := &suite.Tuned{Backend: st.Backend, Variant: st.Variant}
	for _, s := range st.Searches {
		best, ok := s.Best()
		if !ok {
			continue
		}
		tc := suite.TunedCase{ID: s.CaseID, Tunables: best.Config, KernelNs: int64(math.Round(best.KernelNs)), Evaluations: len(s.Evaluations)}
		if d, ok := s.Default(space); ok && d.Accepted {
			tc.DefaultKernelNs = int64(math.Round(d.KernelNs))
		}
		t.Cases = append(t.Cases, tc)
	}
	return t
}
