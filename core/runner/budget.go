package runner

import (
	"strings"
	"time"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/sdk"
)

// Budget is how much wall time a run may spend (flashcore run --budget):
// per row, per suite, or both, the tighter applying. A budget trades
// precision for time in the open: it lowers the stopping rule's time cap
// (docs/measurement.md, "Budgets"), so sampling stops at the budget
// instead of at the noise target, and the table prints the ± reached.
// It cuts nothing else: warm-up, min_samples, the call samples, the
// cross-check, the checks and the host's recheck all run in full, so a
// row may overrun its budget by them.
type Budget struct {
	Row   time.Duration // each row's; 0 for none
	Suite time.Duration // the whole run's, shared by the rows left; 0 for none
}

// rowBudget is the budget of the row about to run; nil without one. A
// suite's budget gives each row an equal share of what is left of it.
func (r *runner) rowBudget() *results.Budget {
	b := r.cfg.Budget
	if b.Row <= 0 && b.Suite <= 0 {
		return nil
	}
	ns := b.Row
	if b.Suite > 0 {
		left := max(r.rowsPlanned-r.rowsDone, 1)
		share := max(b.Suite-time.Since(r.started), 0) / time.Duration(left)
		if ns <= 0 || share < ns {
			ns = share
		}
	}
	return &results.Budget{Ns: ns.Nanoseconds()}
}

// budgetCap lowers m's time cap to the row's budget: what is left of it,
// shared by the modesLeft Runs still to take (this one included). It
// reports whether the budget's cap is the tighter; the stopping rule still
// takes min_samples whatever the cap.
func (r *runner) budgetCap(m *sdk.Measurement, budget *results.Budget, modesLeft int) bool {
	if budget == nil || r.clock == nil {
		return false
	}
	spent := time.Since(r.clock.start)
	capped := max((time.Duration(budget.Ns)-spent)/time.Duration(max(modesLeft, 1)), time.Nanosecond)
	if m.TimeCap > 0 && m.TimeCap <= capped {
		return false
	}
	m.TimeCap = capped
	return true
}

// stoppedByTimeCap says whether a sampling block of the plugin's report
// stopped at the time cap (sdk.StopTimeCap).
func stoppedByTimeCap(plugin []results.PluginPhase) bool {
	for _, p := range plugin {
		if name, stop, ok := strings.Cut(p.Name, ":"); ok && name == sdk.PhaseSample && stop == sdk.StopTimeCap {
			return true
		}
	}
	return false
}
