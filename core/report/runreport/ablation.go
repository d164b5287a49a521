package runreport

import (
	"fmt"
	"io"
	"strings"

	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/report/cell"
	"github.com/flashcore/bench/core/report/table"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/suite"
)

// WriteAblation draws the seeds' ablation table for each case of run: one
// row per step of chain in chain order, with its kernel time, its speedup
// over the step before (incremental) and over the first step (cumulative),
// its error against the fp64 reference, its verdict and the key change,
// the variant's own description. A step that has no time has no speedup,
// and the next step's incremental speedup is taken over the last step
// that had one.
func WriteAblation(w io.Writer, run *results.Run, chain []suite.ChainStep, markdown bool) error {
	mode := run.PrimaryMode()
	for i, c := range run.Cases {
		rows := ablationRows(run, chain, c.ID)
		if rows == nil {
			continue
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		title := c.ID + " · " + caseLabel(c) + " · " + string(mode) + " L2"
		if markdown {
			title = "**" + c.ID + "** · " + caseLabel(c) + " · " + string(mode) + " L2\n"
		}
		fmt.Fprintln(w, title)
		t := table.Grid{
			Header: []string{"Step", "Row", "Kernel", "vs previous", "Cumulative", "Rel err", "Verdict", "Key change"},
			Right:  []bool{true, false, true, true, true, true, false, false},
			Rows:   rows,
		}
		if err := table.Draw(w, t, markdown); err != nil {
			return err
		}
	}
	return nil
}

// ablationRows are the chain's rows in one case; nil when no step ran there.
func ablationRows(run *results.Run, chain []suite.ChainStep, caseID string) [][]string {
	mode := run.PrimaryMode()
	var rows [][]string
	var first, previous float64
	found := false
	for i, step := range chain {
		res := chainResult(run, step, caseID)
		cells := []string{fmt.Sprint(i + 1), step.String(), cell.Missing, cell.Missing, cell.Missing, cell.Missing, "not run", keyChange(run, step, res)}
		if res != nil {
			found = true
			cells[1] = res.Label
			cells[5], cells[6] = relErrCell(res.Check), verdictCell(res)
			if t, ok := res.TimingFor(mode); ok && report.Comparable(res, mode) {
				ns := t.Kernel.MedianNs
				cells[2] = kernelCell(t.Kernel)
				if previous > 0 {
					cells[3] = cell.Ratio(previous / ns)
				}
				if first == 0 {
					first = ns
				}
				cells[4] = cell.Ratio(first / ns)
				previous = ns
			}
		}
		rows = append(rows, cells)
	}
	if !found {
		return nil
	}
	return rows
}

// chainResult is the row of step in a case: the named variant, or the
// backend's first variant (as it described itself) when the step names
// none.
func chainResult(run *results.Run, step suite.ChainStep, caseID string) *results.Result {
	variant := step.Variant
	if variant == "" {
		variant = firstVariant(run, step.Backend)
	}
	for i := range run.Results {
		r := &run.Results[i]
		if r.CaseID == caseID && r.Backend == step.Backend && (variant == "" || r.Variant == variant) {
			return r
		}
	}
	return nil
}

func firstVariant(run *results.Run, backend string) string {
	for _, b := range run.Backends {
		if b.Name == backend && len(b.Variants) > 0 {
			return b.Variants[0].Name
		}
	}
	return ""
}

// keyChange is the description the step's variant gives of itself.
func keyChange(run *results.Run, step suite.ChainStep, res *results.Result) string {
	variant := step.Variant
	if res != nil {
		variant = res.Variant
	} else if variant == "" {
		variant = firstVariant(run, step.Backend)
	}
	for _, b := range run.Backends {
		if b.Name != step.Backend {
			continue
		}
		for _, v := range b.Variants {
			if v.Name == variant {
				return strings.TrimSpace(v.Description)
			}
		}
	}
	return cell.Missing
}
