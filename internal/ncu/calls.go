package ncu

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/flashcore/bench/sdk"
)

// TimeMetric is the kernel's duration on the GPU, the figure timing is
// checked against.
const TimeMetric = "gpu__time_duration.sum"

// RowKey names one row of a run: a case and a row label.
type RowKey struct {
	CaseID string
	Label  string
}

func (k RowKey) String() string { return k.CaseID + " " + k.Label }

// CallRange is the name of the NVTX push/pop range a bridge's worker puts
// around call n (counting from 1) of a row while it runs under a profiler:
// "flashcore call <case> <label> #<n>". flashcore_worker.py builds the same
// string (call_range); a test keeps the two in step.
func CallRange(row RowKey, n int) string {
	return sdk.CallRange(row.CaseID, row.Label, n)
}

// parseCallRange is CallRange backwards; false for any other name (a
// kernel ncu did not rename because it ran outside every range). ncu's
// renamed kernel names vary by release: the range alone, the range and
// the kernel's own name after a "/", or the outer range before it
// ("flashcore/flashcore call ... #3/kernel"); each is accepted.
func parseCallRange(name string) (RowKey, int, bool) {
	at := strings.Index(name, "flashcore call ")
	if at < 0 {
		return RowKey{}, 0, false
	}
	rest := name[at+len("flashcore call "):]
	caseID, rest, ok := strings.Cut(rest, " ")
	if !ok {
		return RowKey{}, 0, false
	}
	i := strings.Index(rest, " #")
	if i < 0 {
		return RowKey{}, 0, false
	}
	label, digits := rest[:i], rest[i+2:]
	end := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' })
	if end >= 0 {
		digits = digits[:end]
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 || label == "" {
		return RowKey{}, 0, false
	}
	return RowKey{CaseID: caseID, Label: label}, n, true
}

// Call is one call of a backend as ncu saw it: every kernel it launched.
type Call struct {
	Row     RowKey
	N       int // the call's number within its row; 0 when unknown
	Kernels []Kernel
}

// DurationNs is the call's device time: the sum of its kernels' durations.
// false when a kernel has no duration.
func (c Call) DurationNs() (float64, bool) {
	total := 0.0
	for _, k := range c.Kernels {
		d, ok := k.Value(TimeMetric)
		if !ok {
			return 0, false
		}
		total += d
	}
	return total, len(c.Kernels) > 0
}

// CallsByRange groups kernels into calls by the NVTX call range each was
// renamed to (renamed: the same report printed with --print-nvtx-rename
// kernel, matched to kernels by ID). Kernels outside every call range are
// left out. Calls come back in the order of their first kernel.
func CallsByRange(kernels, renamed []Kernel) ([]Call, error) {
	ranges := make(map[int]string, len(renamed))
	for _, k := range renamed {
		ranges[k.ID] = k.Name
	}
	var calls []Call
	index := map[string]int{}
	for _, k := range kernels {
		name, ok := ranges[k.ID]
		if !ok {
			return nil, fmt.Errorf("kernel ID %d (%s) is missing from the renamed report", k.ID, k.Name)
		}
		row, n, ok := parseCallRange(name)
		if !ok {
			continue
		}
		key := CallRange(row, n)
		i, seen := index[key]
		if !seen {
			i = len(calls)
			index[key] = i
			calls = append(calls, Call{Row: row, N: n})
		}
		calls[i].Kernels = append(calls[i].Kernels, k)
	}
	return calls, nil
}

// CallsOneEach makes every kernel its own call of row: right where each
// call launches exactly one selected kernel (the Go CUDA plugins, picked
// by AttentionKernels) and the session ran that row alone.
func CallsOneEach(kernels []Kernel, row RowKey) []Call {
	calls := make([]Call, len(kernels))
	for i, k := range kernels {
		calls[i] = Call{Row: row, N: i + 1, Kernels: []Kernel{k}}
	}
	return calls
}

// CallsOf are the calls of one row.
func CallsOf(calls []Call, row RowKey) []Call {
	return slices.DeleteFunc(slices.Clone(calls), func(c Call) bool { return c.Row != row })
}
