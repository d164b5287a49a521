package timingcheck

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/underncu"
	"github.com/flashcore/bench/internal/ncu"
	"github.com/flashcore/bench/sdk"
)

// ReferenceAuto is the reference choice that takes CUPTI for the rows of
// the plugins shipped with this flashcore and ncu for the others; the
// other choices are ncu.ReferenceCupti and ncu.ReferenceNcu.
const ReferenceAuto = "auto"

// Row is a row of the unprofiled run with our figure, its verdict once it
// is judged, and how ncu reaches it when ncu must.
type Row struct {
	Result results.Result
	// Check is our figure against the reference; its Verdict is "" while
	// the row waits for ncu.
	Check  ncu.TimingRow
	Reach  ncu.Reach
	Plugin host.Plugin
	// Report is the ncu report of the row's session, once it ran.
	Report string
	// mode is the L2 mode the audit checks (AuditRows).
	mode sdk.L2Mode
	// byClock is set on a row the host's clock alone refused, which the
	// audit measures to reconcile (AuditRows).
	byClock bool
}

// RunEnv is what the plugins' environment holds in the unprofiled run:
// Triton's autotuning cached in dir (AutotuneCacheEnv) and, unless the
// reference is ncu alone, the request to time every call by CUPTI too.
func RunEnv(dir, reference string) []string {
	env := AutotuneCacheEnv(dir)
	if reference != ncu.ReferenceNcu {
		env = append(env, sdk.TimingReferenceEnv+"="+sdk.TimingReferenceCUPTI)
	}
	return env
}

// AutotuneCacheEnv makes Triton keep its autotuner's choices on disk in
// dir, so that every run of verify-timing, profiled or not, launches the
// configuration the first one chose: under ncu, whose interception of
// every launch distorts the autotuner's timings, it would choose another.
func AutotuneCacheEnv(dir string) []string {
	return []string{"TRITON_CACHE_AUTOTUNING=1", "TRITON_CACHE_DIR=" + filepath.Join(dir, "triton-cache")}
}

// Rows are the run's rows with our figure in mode, each judged at once
// against the CUPTI reference its run recorded, or left for ncu.
// Rows with nothing to check are SKIP already. executable is the running
// flashcore, beside which the shipped plugins lie.
func Rows(run *results.Run, plugins []host.Plugin, mode sdk.L2Mode, reference, executable string) []*Row {
	byName := map[string]host.Plugin{}
	for _, p := range plugins {
		byName[p.Name] = p
	}
	var rows []*Row
	for _, res := range run.Results {
		r := &Row{Result: res, Plugin: byName[res.Backend],
			Check: ncu.TimingRow{Backend: res.Backend, Row: underncu.RowKey(res)}}
		rows = append(rows, r)
		timing, ok := res.TimingFor(mode)
		if !ok || timing.Kernel.N == 0 {
			r.Check.Verdict, r.Check.Reason = ncu.Skip, fmt.Sprintf("not timed (%s)", res.Status)
			continue
		}
		r.Check.OursNs = timing.Kernel.MedianNs
		_, hasCupti := timing.Facts[sdk.FactReferenceNs]
		_, cuptiFailed := timing.Facts[sdk.FactReferenceError]
		// The CUPTI reference is facts a backend reports about itself: it is
		// taken only from the plugins this flashcore ships, whose code
		// computes it (cudakit, the bridges' worker). Any other
		// backend is measured by ncu, from outside.
		shipped := shippedBeside(executable, r.Plugin.Path)
		useCupti := (hasCupti || cuptiFailed) && shipped && reference != ncu.ReferenceNcu
		if useCupti {
			r.Check = cuptiReferenceRow(r.Check, timing.Facts)
			continue
		}
		if reference == ncu.ReferenceCupti {
			why := fmt.Sprintf("timed by %s: no CUPTI reference (try --reference ncu)", timing.Method)
			if (hasCupti || cuptiFailed) && !shipped {
				why = "not a plugin shipped with flashcore: a reference it reports about itself is not taken (try --reference ncu)"
			}
			r.Check.Verdict, r.Check.Reason = ncu.Skip, why
			continue
		}
		reach, ok := ncu.ReachFor(timing.Method)
		if !ok {
			r.Check.Verdict, r.Check.Reason = ncu.Skip, fmt.Sprintf("timed by %s: no GPU kernel", timing.Method)
			continue
		}
		r.Reach = reach
	}
	return rows
}

// WithoutNcu gives every row still waiting for ncu an ERROR saying why
// ncu cannot measure it (ncu missing, or not allowed to read the
// counters).
func WithoutNcu(rows []*Row, why error) {
	for _, r := range rows {
		if r.Check.Verdict == "" {
			r.Check = ncu.Errored(r.Check.Backend, r.Check.Row, r.Check.OursNs, ncu.ReferenceNcu, why.Error())
		}
	}
}

// shippedBeside reports whether plugin runs this flashcore's own plugin
// code: it resolves to one of the shippedPluginBinaries in the directory
// of executable (both with links followed).
func shippedBeside(executable, plugin string) bool {
	exe, err1 := filepath.EvalSymlinks(executable)
	bin, err2 := filepath.EvalSymlinks(plugin)
	if err1 != nil || err2 != nil {
		return false
	}
	for _, name := range shippedPluginBinaries {
		if bin == filepath.Join(filepath.Dir(exe), name) {
			return true
		}
	}
	return false
}

// shippedPluginBinaries are the multi-call binaries of the plugins built
// with flashcore (Makefile): the plugins that need no CUDA, the Python
// bridges among them, and the CUDA plugins.
var shippedPluginBinaries = []string{"flashcore-plugins", "flashcore-plugins-cuda"}

// cuptiReferenceRow judges row against the per-call CUPTI times in facts.
func cuptiReferenceRow(row ncu.TimingRow, facts map[string]string) ncu.TimingRow {
	if why := facts[sdk.FactReferenceError]; why != "" {
		return ncu.Errored(row.Backend, row.Row, row.OursNs, ncu.ReferenceCupti, why)
	}
	var calls []float64
	for _, field := range strings.Fields(facts[sdk.FactReferenceNs]) {
		ns, err := strconv.ParseFloat(field, 64)
		if err != nil || ns <= 0 {
			return ncu.Errored(row.Backend, row.Row, row.OursNs, ncu.ReferenceCupti,
				fmt.Sprintf("unreadable %s fact %q", sdk.FactReferenceNs, field))
		}
		calls = append(calls, ns)
	}
	activities := 0
	if k := facts[sdk.FactReferenceKernels]; k != "" {
		activities = len(strings.Split(k, "; "))
	}
	return ncu.CompareReference(row.Backend, row.Row, row.OursNs, ncu.ReferenceCupti, calls, activities)
}

// Figures are the rows' checks, in the run's order, for ncu.WriteTiming.
func Figures(rows []*Row) []ncu.TimingRow {
	out := make([]ncu.TimingRow, len(rows))
	for i, r := range rows {
		out[i] = r.Check
	}
	return out
}

// Tally counts the rows that FAILed the bound (findings) and those that
// have no reference figure (failures).
func Tally(rows []ncu.TimingRow) (failed, errored int) {
	for _, r := range rows {
		switch r.Verdict {
		case ncu.Fail:
			failed++
		case ncu.Error:
			errored++
		}
	}
	return failed, errored
}
