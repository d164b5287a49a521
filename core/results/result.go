package results

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flashcore/bench/sdk"
)

// Status is the verdict of one row.
type Status string

const (
	// StatusPass: the output matched the reference and the row was timed.
	StatusPass Status = "pass"
	// StatusFail is a finding: the backend ran, but its output was wrong
	// (or its samples were unusable). Reason says how.
	StatusFail Status = "fail"
	// StatusSkip: the row was not run, e.g. the variant does not support
	// the shape or the backend is unavailable. Reason says why.
	StatusSkip Status = "skip"
	// StatusError is a failure: the plugin crashed, hung or broke the
	// protocol. Reason says where.
	StatusError Status = "error"
)

// Result is one row: one variant of one backend (with one combination of
// tunables) on one case.
type Result struct {
	CaseID  string `json:"case_id"`
	Backend string `json:"backend"`
	Variant string `json:"variant"`
	// Label is the row's name in tables: the variant, followed by
	// "[k=v,...]" (keys sorted) when it has tunables.
	Label    string            `json:"label"`
	Tunables map[string]string `json:"tunables,omitempty"`
	Status   Status            `json:"status"`
	Reason   string            `json:"reason,omitempty"` // why a row failed, was skipped or errored
	// InputSHA256 is the hash the host wrote; LoadedSHA256 the hash the
	// backend computed over what it loaded. They must match.
	InputSHA256  string       `json:"input_sha256,omitempty"`
	LoadedSHA256 string       `json:"loaded_sha256,omitempty"`
	Check        *CheckResult `json:"check,omitempty"` // nil when the output was never checked
	// TimedChecks are the checks of the output the last timed call of each
	// L2 mode left (RunRequest.Output), in the order of Timings: a kernel
	// that behaves only in the checked call fails here.
	TimedChecks []CheckResult `json:"timed_checks,omitempty"`
	// Repeats is what the repeated checked runs ([check] repeat) showed:
	// how far each output differed from the first, and how many held NaN
	// or Inf. Nil when the checked run was done once.
	Repeats *Repeats `json:"repeats,omitempty"`
	// Timings has one entry per measured L2 mode, the primary mode first.
	Timings []Timing `json:"timings,omitempty"`
	// Derived are figures of the primary (first) timing.
	Derived     Derived           `json:"derived,omitzero"`
	Facts       map[string]string `json:"facts,omitempty"`
	Diagnostics []sdk.Diagnostic  `json:"diagnostics,omitempty"`
	// StderrTail is the end of the plugin's stderr, kept for error rows.
	StderrTail string `json:"stderr_tail,omitempty"`
	// Duration is the wall time the row took, all steps included.
	Duration time.Duration `json:"duration_ns"`
	// Time is where Duration went, step by step, by the host's clock;
	// nil in files written before it was recorded.
	Time []Phase `json:"time,omitempty"`
	// Budget is the time budget the row ran under (flashcore run
	// --budget); nil without one.
	Budget *Budget `json:"budget,omitempty"`
	// Device is the GPU the row ran on, when the run was spread over
	// several (flashcore run --devices); nil otherwise.
	Device *RowDevice `json:"device,omitempty"`
}

// RowDevice is the GPU one row ran on, as nvidia-smi names it.
type RowDevice struct {
	Index       int     `json:"index"` // nvidia-smi's index on the host
	Name        string  `json:"name"`  // the model, e.g. "NVIDIA H100 80GB HBM3"
	UUID        string  `json:"uuid"`
	Host        string  `json:"host,omitempty"`
	SMClockMHz  float64 `json:"sm_clock_mhz,omitempty"`  // maximum SM clock
	MemClockMHz float64 `json:"mem_clock_mhz,omitempty"` // maximum memory clock
}

// Model is the device model rows may be compared across: the GPU's name,
// or "" for a row with no device recorded.
func (r *Result) Model() string {
	if r.Device == nil {
		return ""
	}
	return r.Device.Name
}

// HostClockFact marks a row on a GPU that PASSed its checks and that the
// host's clock alone refused (docs/measurement.md, "The timing audit",
// step 5): HostClockRefused when the host's clock refuses it,
// HostClockReconciled once ncu confirmed the kernel time it reported,
// HostClockConfirmed when the audit could not.
const (
	HostClockFact       = "host_clock_flagged"
	HostClockRefused    = "true"
	HostClockReconciled = "reconciled by ncu"
	HostClockConfirmed  = "confirmed by the audit"
)

// HostOwnedFact reports whether a fact's key is the host's to write: its
// clock's and the timing audit's figures and verdicts (host_*, audit_*). A
// plugin's facts under such a key are dropped, so that no plugin can
// forge a verdict the host reads back (HostBound, the audit's choice of
// rows).
func HostOwnedFact(key string) bool {
	return strings.HasPrefix(key, "host_") || strings.HasPrefix(key, "audit_")
}

// HostBound reports whether r PASSed with a kernel time that ncu confirmed
// but that the host's clock cannot reconcile with what its calls cost the
// host: a call whose host side outweighs its kernels, or work done off the
// GPU, which timing alone cannot tell apart. Such a row takes no speedup
// and is never a baseline.
func (r *Result) HostBound() bool {
	return r.Status == StatusPass && r.Facts[HostClockFact] == HostClockReconciled
}

// Primary is the timing of the primary L2 mode, if the row was timed.
func (r *Result) Primary() (Timing, bool) {
	if len(r.Timings) == 0 {
		return Timing{}, false
	}
	return r.Timings[0], true
}

// TimingFor is the timing taken in mode, if there is one.
func (r *Result) TimingFor(mode sdk.L2Mode) (Timing, bool) {
	for _, t := range r.Timings {
		if t.L2 == mode {
			return t, true
		}
	}
	return Timing{}, false
}

// CheckResult is how the output compared with the fp64 reference. For an
// op of several outputs the row's check is the verdict's output (the first
// that failed, else the first), Output names it, and Outputs holds every
// output's own check in the op's order; for an op of one output both are
// left out, and the check is that output's.
type CheckResult struct {
	// Output names the output the figures are of; "" for an op of one.
	Output    string  `json:"output,omitempty"`
	MaxAbsErr float64 `json:"max_abs_err"` // largest |o-r|; NaN (null) when the output holds NaN
	RelL2Err  float64 `json:"rel_l2_err"`  // ||o-r|| / ||r|| over the rows checked
	NaN       int     `json:"nan"`         // elements that are NaN (not counting unwritten ones)
	Inf       int     `json:"inf"`         // elements that are ±Inf
	Unwritten int     `json:"unwritten"`   // elements still holding the poison bytes
	// Violations are elements outside Atol + Rtol*|r|.
	Violations  int  `json:"violations"`
	RowsChecked int  `json:"rows_checked"` // query rows compared
	RowsTotal   int  `json:"rows_total"`   // query rows in the output (B*H*Sq)
	Sampled     bool `json:"sampled"`      // only a sample of the rows was checked
	// RowSeed drew the sampled rows, at random, after the output existed;
	// check.CheckWithSeed re-checks the same rows. 0 when every row was checked.
	RowSeed uint64 `json:"row_seed,omitempty"`
	// OutOfRange counts output elements outside the range of V over the
	// keys their row sees; the bound covers every element.
	OutOfRange int `json:"out_of_range"`
	// EveryRow is the check of every row against the harness's fp32
	// reference, where the case had one (Case.FullReference); nil
	// otherwise.
	EveryRow *EveryRow `json:"every_row,omitempty"`
	// Tolerance is the tolerance the verdict applied.
	Tolerance Tolerance `json:"tolerance"`
	// Outputs are the checks of every output, each naming its output,
	// when the op has several (schema 5); nil otherwise.
	Outputs []CheckResult `json:"outputs,omitempty"`
}

// EveryRow is a check of every element of an output against the
// harness's fp32 reference (docs/correctness.md).
type EveryRow struct {
	// Reference names it: "fp32 (NVIDIA H100 80GB HBM3)".
	Reference string `json:"reference"`
	// Calibration is the reference's largest error against fp64 on the
	// rows it was held to; twice it is added to every element's bound.
	Calibration float64 `json:"calibration"`
	MaxAbsErr   float64 `json:"max_abs_err"`
	RelL2Err    float64 `json:"rel_l2_err"`
	// Violations counts elements outside atol + rtol·|r| + 2·Calibration.
	Violations int `json:"violations"`
	Rows       int `json:"rows"`
}

// Repeats summarise the checked runs of one row on the same inputs: the
// figures of the determinism and stability gates (docs/loop.md). Every
// difference is taken against the first run's output; an element that is
// NaN or Inf in either run counts as differing but adds nothing to the
// figures, which stay finite.
type Repeats struct {
	Runs int `json:"runs"` // checked runs done, the first included
	// Differing counts the runs whose output was not bit-identical to the
	// first; DifferingElements is the most elements one of them differed in.
	Differing         int `json:"differing"`
	DifferingElements int `json:"differing_elements"`
	// MaxAbsDiff is the largest |run k - run 1| over all elements and runs.
	MaxAbsDiff float64 `json:"max_abs_diff"`
	// MaxULPs is the largest distance in units in the last place of the
	// dtype between an element of run k and of run 1.
	MaxULPs int64 `json:"max_ulps"`
	// RelL2Diff is the largest ||run k - run 1||₂ / ||run 1||₂.
	RelL2Diff float64 `json:"rel_l2_diff"`
	// NonFiniteRuns counts the runs whose output held a NaN or an Inf, the
	// first included.
	NonFiniteRuns int `json:"non_finite_runs"`
}

// Timing is the measurement of a row in one L2 mode.
type Timing struct {
	L2 sdk.L2Mode `json:"l2"`
	// Method names how kernel times were taken, e.g. "cuda-events+spin".
	Method string `json:"method"`
	// Kernel is the device time of the attention work alone, with host
	// launch gaps excluded.
	Kernel Stats `json:"kernel"`
	// Call is the host-inclusive time of one whole call, synchronised.
	Call Stats `json:"call"`
	// CrossCheck is an independent measurement of the kernel (e.g. CUPTI),
	// when the backend has one.
	CrossCheck *Stats `json:"cross_check,omitempty"`
	// SMClockMHz is the SM clock seen while sampling; 0 when unknown.
	SMClockMHz float64 `json:"sm_clock_mhz,omitempty"`
	// Before and After are the device's state (SM clock, temperature,
	// power) at the start and the end of sampling, where the backend could
	// read them.
	Before *sdk.DeviceState `json:"before,omitempty"`
	After  *sdk.DeviceState `json:"after,omitempty"`
	// Throttled is set when the SM clock fell by more than the documented
	// threshold during sampling; ThrottleNote says by how much.
	Throttled    bool   `json:"throttled,omitempty"`
	ThrottleNote string `json:"throttle_note,omitempty"`
	// Facts are what the backend said about this set of samples, such as
	// calls_per_sample or the spin length; they differ between L2 modes.
	Facts map[string]string `json:"facts,omitempty"`
	// Samples are the raw samples that Kernel, Call and CrossCheck
	// summarise, so that a later compare can test them rather than trust
	// the summaries. Nil in files written before schema version 2.
	Samples *Samples `json:"samples,omitempty"`
}

// Samples are the raw timed samples of one row in one L2 mode, in
// integer nanoseconds, in the order they were taken (so drift stays
// visible). Each list has as many entries as the n of its Stats.
type Samples struct {
	KernelNs     []int64 `json:"kernel_ns,omitempty"`
	CallNs       []int64 `json:"call_ns,omitempty"`
	CrossCheckNs []int64 `json:"cross_check_ns,omitempty"`
	// KernelBlocks counts the KernelNs taken in each placement of the
	// case's buffers, in order (sdk.Samples.KernelBlocks); they sum to
	// len(KernelNs). Nil when every sample came from one placement, and in
	// files written before schema version 4.
	KernelBlocks []int `json:"kernel_blocks,omitempty"`
}

// PlacementMedians are the medians of the kernel samples of each
// placement, in order (KernelBlocks); nil unless there are two placements
// or more.
func (s *Samples) PlacementMedians() []float64 {
	if len(s.KernelBlocks) < 2 {
		return nil
	}
	medians := make([]float64, 0, len(s.KernelBlocks))
	at := 0
	for _, n := range s.KernelBlocks {
		if n < 1 || at+n > len(s.KernelNs) {
			return nil
		}
		block := make([]float64, n)
		for i, ns := range s.KernelNs[at : at+n] {
			block[i] = float64(ns)
		}
		slices.Sort(block)
		medians = append(medians, sdk.MedianSorted(block))
		at += n
	}
	return medians
}

// Stats summarise one set of timed samples. Times are nanoseconds, held as
// float64 so that JSON carries plain numbers. A figure that does not exist
// (the median of no samples, the noise of too few) is NaN, written as null.
type Stats struct {
	N        int     `json:"n"`
	MedianNs float64 `json:"median_ns"`
	MeanNs   float64 `json:"mean_ns"`
	StdevNs  float64 `json:"stdev_ns"`
	MinNs    float64 `json:"min_ns"`
	MaxNs    float64 `json:"max_ns"`
	P10Ns    float64 `json:"p10_ns"`
	P90Ns    float64 `json:"p90_ns"`
	// RelNoise is sdk.RelativeNoise: the half-width of the 95% confidence
	// interval of the median over the median (0.01 = 1%).
	RelNoise float64 `json:"rel_noise"`
}

// Derived are throughput figures computed from the primary kernel median.
type Derived struct {
	TFLOPS        float64 `json:"tflops"`          // Case.FLOPs / median, in 10^12 FLOP/s
	GBps          float64 `json:"gbps"`            // Case.Bytes / median, in 10^9 B/s
	PctPeakTFLOPS float64 `json:"pct_peak_tflops"` // percent of the device's PeakTFLOPS; 0 when unknown
	PctPeakGBps   float64 `json:"pct_peak_gbps"`   // percent of the device's PeakGBps; 0 when unknown
}

// IdentityFacts are the row facts that name the code a row ran: when one
// differs between two runs of a row, they did not time the same kernel.
// Other facts (registers, occupancy, output hashes) follow from these.
var IdentityFacts = []string{"kernel_source_sha256", "kernel_function", "kernel_target", "config", "sdp_backend"}

// FactChange is one identity fact that differs between two runs of a row.
type FactChange struct {
	Fact, Before, After string
}

func (c FactChange) String() string { return fmt.Sprintf("%s: %s → %s", c.Fact, c.Before, c.After) }

// IdentityChanges lists the identity facts that both r and other recorded
// and that differ between them, r's value first. A fact on one side only
// (an ERROR row reports none) is not a change of code.
func (r *Result) IdentityChanges(other *Result) []FactChange {
	var out []FactChange
	for _, fact := range IdentityFacts {
		a, b := r.Facts[fact], other.Facts[fact]
		if a != "" && b != "" && a != b {
			out = append(out, FactChange{Fact: fact, Before: a, After: b})
		}
	}
	return out
}

// Phase is one step of a row and the host's time of it: the host's
// monotonic clock from the end of the step before to the end of this one,
// so a row's phases add up to its Duration (docs/results-schema.md).
type Phase struct {
	// Name is the step: one of the Phase* names.
	Name string `json:"name"`
	// L2 is the L2 mode of a step taken once per mode (PhaseRun,
	// PhaseTimedCheck); "" otherwise.
	L2 sdk.L2Mode `json:"l2,omitempty"`
	Ns int64      `json:"ns"`
	// Plugin is the plugin's own report of where its time went inside
	// this step's call (a Run: warm-up, sampling blocks, moves, call
	// samples, cross-check, output), by its own clock, in order. It
	// splits the host's figure and never replaces it; nil when the
	// plugin sent none.
	Plugin []PluginPhase `json:"plugin,omitempty"`
	// Host is the host's own split of this step, by its clock, in order:
	// for PhaseRecheck, the Recheck* parts. Its parts add up to Ns but
	// for what ran between them; nil for the other steps.
	Host []PluginPhase `json:"host,omitempty"`
}

// PluginPhase is one part of a plugin call, as the plugin reported it
// (sdk.Phase): a sampling block is "sample:" and why it stopped.
type PluginPhase struct {
	Name string `json:"name"`
	Ns   int64  `json:"ns"`
}

// The steps of a row (Phase.Name), in the order they run.
const (
	PhaseStart      = "start"       // the plugin's restart, in a row after a failed one
	PhaseInputs     = "inputs"      // writing the case's inputs into the row's workspace
	PhaseWalls      = "walls"       // freezing the other plugins, thawing this one
	PhasePrepare    = "prepare"     // the Prepare call
	PhaseCheckedRun = "checked_run" // a Fetch call: the checked run, its output written
	PhaseCheck      = "check"       // reading the checked output and the fp64 check
	PhaseRun        = "run"         // a Run call: warm-up, samples, call samples, cross-check
	PhaseTimedCheck = "timed_check" // the samples' rules, and the check of the last timed output
	PhaseRecheck    = "recheck"     // the host's clock batch on fresh inputs, and their check
	PhaseRelease    = "release"     // the Release call
	PhaseOther      = "other"       // the rest: workspace removal, interference accounting
)

// The parts of a PhaseRecheck step (Phase.Host), in the order they run.
const (
	RecheckInputs   = "fresh_inputs" // the fresh inputs generated and written
	RecheckRelease  = "release"      // the Release call before their Prepare
	RecheckPrepare  = "prepare"      // the Prepare call on them
	RecheckBatch    = "batch"        // the batch rule's batches of N calls
	RecheckMarginal = "marginal"     // the marginal rule's batches of n and 2n calls (on a CPU)
	RecheckCheck    = "check"        // the fp64 check of the batch's output, the reference of the fresh inputs included
)

// Budget is the time budget of one row and where it stopped the sampling.
type Budget struct {
	// Ns is the row's budget (with a suite's budget, the row's share of
	// what was left when it began).
	Ns int64 `json:"ns"`
	// Hit lists the L2 modes whose sampling stopped at the budget's
	// time cap, not at the noise target: their ± is what the budget
	// allowed. Empty when the budget cut nothing.
	Hit []sdk.L2Mode `json:"hit,omitempty"`
}
