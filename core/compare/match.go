package compare

import (
	"fmt"
	"slices"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/sdk"
)

// rowKey identifies a row across runs.
type rowKey struct{ caseID, name string }

// matcher gathers the rows of every run in order of first appearance.
type matcher struct {
	runs       int
	names      results.RowNamer
	caseOrder  []string
	rowsOfCase map[string][]rowKey
	rows       map[rowKey]*Row
	// previous is the row the current run put last in each case, so that
	// a row new in a later run is listed after the row it followed there.
	previous   map[string]rowKey
	duplicates []string
}

// matchRows pairs the rows of every run by case ID and row name. Cases
// come in order of first appearance (each run's case list, then its
// results), rows within a case likewise. A run with two rows of the same
// name in a case keeps the first, with a note.
func matchRows(runs []*results.Run, labels []string, mode sdk.L2Mode) ([]Row, []string) {
	m := &matcher{runs: len(runs), names: results.NewRowNamer(runs...), rowsOfCase: map[string][]rowKey{}, rows: map[rowKey]*Row{}}
	for i, run := range runs {
		m.previous = map[string]rowKey{}
		for _, c := range run.Cases {
			m.addCase(c.ID)
		}
		onCPU := cpuBackends(run)
		for j := range run.Results {
			m.add(i, labels[i], &run.Results[j], mode, onCPU[run.Results[j].Backend])
		}
	}
	return m.ordered(), m.duplicates
}

func (m *matcher) addCase(id string) {
	if _, seen := m.rowsOfCase[id]; !seen {
		m.caseOrder = append(m.caseOrder, id)
		m.rowsOfCase[id] = nil
	}
}

// cpuBackends are the backends of run whose device is a CPU.
func cpuBackends(run *results.Run) map[string]bool {
	cpu := map[string]bool{}
	for _, b := range run.Backends {
		cpu[b.Name] = b.Device.Kind == "cpu"
	}
	return cpu
}

func (m *matcher) add(run int, runLabel string, r *results.Result, mode sdk.L2Mode, onCPU bool) {
	m.addCase(r.CaseID)
	key := rowKey{r.CaseID, m.names.Name(r)}
	row, ok := m.rows[key]
	if !ok {
		row = &Row{CaseID: key.caseID, Name: key.name, Backend: r.Backend, Measures: make([]Measure, m.runs)}
		for i := range row.Measures {
			row.Measures[i] = Measure{KernelNs: nan(), RelNoise: nan()}
		}
		m.rows[key] = row
		m.insert(key)
	}
	m.previous[key.caseID] = key
	if row.Measures[run].Result != nil {
		m.duplicates = append(m.duplicates, fmt.Sprintf("%s has two rows %s in case %s; the first is compared",
			runLabel, key.name, key.caseID))
		return
	}
	row.Measures[run] = measure(r, mode)
	row.Measures[run].OnCPU = onCPU
}

// insert lists a new row in its case: after the row the current run put
// before it, or first when the run has put none there yet. In the first
// run that is the end of the list.
func (m *matcher) insert(key rowKey) {
	keys := m.rowsOfCase[key.caseID]
	at := 0
	if prev, ok := m.previous[key.caseID]; ok {
		at = slices.Index(keys, prev) + 1
	}
	m.rowsOfCase[key.caseID] = slices.Insert(keys, at, key)
}

func (m *matcher) ordered() []Row {
	var rows []Row
	for _, id := range m.caseOrder {
		for _, key := range m.rowsOfCase[id] {
			rows = append(rows, *m.rows[key])
		}
	}
	return rows
}
