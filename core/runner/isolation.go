package runner

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/flashcore/bench/core/results"
)

// interferenceFloor is how much CPU time other backends may use while a
// row is measured before the row is refused: idle honest plugins use
// none (they are frozen where the machine allows), so this is the
// scheduler's crumbs, not a budget.
const interferenceFloor = 50 * time.Millisecond

// interferenceShare is the same bound as a share of the row's wall time,
// for long rows; the larger of the two holds.
const interferenceShare = 0.05

// rowCaseDir is the directory a row's workspace goes in: the case's
// directory inside the plugin's own workspace, the one place a confined
// plugin may write, so that no plugin can see another's rows.
func rowCaseDir(b *backend, caseName string) string {
	return filepath.Join(b.instance.Workspace(), "rows", caseName)
}

// cpuMark is what each other started backend had used of the CPU when a
// row began.
type cpuMark map[*backend]time.Duration

// isolateRow thaws b and freezes every other started backend, so that
// none of them runs while b is measured, and marks their CPU time.
func (r *runner) isolateRow(b *backend) cpuMark {
	mark := cpuMark{}
	for _, o := range r.backends {
		if o == b || o.instance == nil || o.instance.Exited() {
			continue
		}
		o.instance.Freeze()
		if used, ok := o.instance.CPUTime(); ok {
			mark[o] = used
		}
	}
	if b.instance != nil {
		b.instance.Thaw()
	}
	return mark
}

// thawAll lets every frozen plugin run again, so it can exit gracefully.
func (r *runner) thawAll() {
	for _, b := range r.backends {
		if b.instance != nil {
			b.instance.Thaw()
		}
	}
}

// checkInterference reads what the other backends used of the CPU while
// the row ran. A backend that used more than the bound took the CPU from
// the row's measurement (it should have been idle): the row's timing is
// refused and the culprit named. Each backend's total is kept for the
// run's record.
func (r *runner) checkInterference(mark cpuMark, wall time.Duration, res *results.Result) {
	bound := max(interferenceFloor, time.Duration(interferenceShare*float64(wall)))
	var culprits []string
	for o, before := range mark {
		if o.instance == nil {
			continue
		}
		after, ok := o.instance.CPUTime()
		if !ok || after < before {
			continue // restarted: another process's count
		}
		used := after - before
		o.cpuOutsideRows += used
		o.cpuRead = true
		if used > bound {
			culprits = append(culprits, fmt.Sprintf("%s used %v of CPU", o.plugin.Name, used.Round(time.Millisecond)))
		}
	}
	if len(culprits) == 0 || res.Status == results.StatusSkip {
		return
	}
	slices.Sort(culprits)
	refuse(res, fmt.Sprintf("interference: while this row was measured, %s (at most %v is allowed to an idle plugin)",
		strings.Join(culprits, "; "), bound.Round(time.Millisecond)))
}

// recordCPUOutsideRows puts each backend's CPU time outside its rows into
// the run's backend records.
func (r *runner) recordCPUOutsideRows() {
	for i, b := range r.backends {
		if i < len(r.run.Backends) && b.cpuRead {
			ms := float64(b.cpuOutsideRows.Microseconds()) / 1000
			r.run.Backends[i].CPUOutsideRowsMs = &ms
		}
	}
}
