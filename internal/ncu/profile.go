package ncu

import (
	"cmp"
	"math"
	"regexp"
	"slices"
	"strings"
)

// profileExtraMetrics are collected beside profileSections: the duration
// and the tensor pipe's activity, which the seeds' optimisation loop read
// first.
var profileExtraMetrics = []string{TimeMetric, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"}

// A Reading is one figure of the profile table and the ncu metrics it may
// come from, the first one present winning (names change between ncu
// versions and architectures).
type Reading struct {
	Name    string
	Metrics []string
	Unit    unitKind
}

type unitKind int

const (
	percent unitKind = iota
	nanoseconds
	bytesUnit
	count
)

// The readings of the profile table, in its order.
var (
	readDuration   = Reading{"Duration", []string{TimeMetric}, nanoseconds}
	readTensor     = Reading{"Tensor pipe active", []string{"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed", "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active"}, percent}
	readDRAM       = Reading{"DRAM throughput", []string{"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "dram__throughput.avg.pct_of_peak_sustained_elapsed"}, percent}
	readAchieved   = Reading{"Achieved occupancy", []string{"sm__warps_active.avg.pct_of_peak_sustained_active"}, percent}
	readTheory     = Reading{"Theoretical occupancy", []string{"sm__maximum_warps_per_active_cycle_pct"}, percent}
	readL2Hit      = Reading{"L2 hit rate", []string{"lts__t_sector_hit_rate.pct"}, percent}
	readRegisters  = Reading{"Registers per thread", []string{"launch__registers_per_thread"}, count}
	readShared     = Reading{"Shared memory per block", []string{"launch__shared_mem_per_block_static+launch__shared_mem_per_block_dynamic", "launch__shared_mem_per_block"}, bytesUnit}
	readBlock      = Reading{"Threads per block", []string{"launch__block_size"}, count}
	readGrid       = Reading{"Blocks", []string{"launch__grid_size"}, count}
	readWaves      = Reading{"Waves per SM", []string{"launch__waves_per_multiprocessor"}, count}
	profileReading = []Reading{readDuration, readTensor, readDRAM, readAchieved, readTheory, readL2Hit,
		readRegisters, readShared, readBlock, readGrid, readWaves}
)

// Figure is a reading's value in one kernel: the metric it came from and
// its value in base units; Metric is "" when the kernel has none.
type Figure struct {
	Reading Reading
	Metric  string
	Value   float64
}

// read finds r's first metric present in k. A metric "a+b" is the sum of
// two metrics (the kernel's static and dynamic shared memory).
func read(k Kernel, r Reading) Figure {
	for _, name := range r.Metrics {
		if v, ok := sumOf(k, name); ok {
			return Figure{Reading: r, Metric: name, Value: v}
		}
	}
	return Figure{Reading: r, Value: math.NaN()}
}

func sumOf(k Kernel, expr string) (float64, bool) {
	total := 0.0
	for _, name := range strings.Split(expr, "+") {
		v, ok := k.Value(name)
		if !ok {
			return 0, false
		}
		total += v
	}
	return total, true
}

// Limiter is what bounds how many blocks an SM holds: the smallest of
// ncu's occupancy limits (launch__occupancy_limit_*, in blocks per SM).
type Limiter struct {
	Metric string
	Cause  string // "registers", "shared memory", "warps", "blocks", …
	Blocks float64
}

var limiterCauses = map[string]string{
	"registers": "registers", "shared_mem": "shared memory", "warps": "warps per SM",
	"blocks": "blocks per SM", "barriers": "barriers",
}

func occupancyLimiter(k Kernel) (Limiter, bool) {
	var best Limiter
	found := false
	for _, name := range sortedMetricNames(k) {
		suffix, ok := strings.CutPrefix(name, "launch__occupancy_limit_")
		if !ok {
			continue
		}
		v, ok := k.Value(name)
		if !ok || (found && v >= best.Blocks) {
			continue
		}
		best, found = Limiter{Metric: name, Cause: cmp.Or(limiterCauses[suffix], suffix), Blocks: v}, true
	}
	return best, found
}

// Stall is one warp stall reason: the average cycles a warp spent stalled
// for it per issued instruction, and its share of all stall reasons.
type Stall struct {
	Metric    string
	Reason    string
	PerIssue  float64
	Share     float64 // 0..1
	rawReason string
}

// stallMetric matches ncu's per-reason stall averages: WarpStateStats'
// smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio, and
// the smsp__average_warp_latency_issue_stalled_<reason>.ratio form.
var stallMetric = regexp.MustCompile(`^smsp__average_warps?_(?:latency_)?issue_stalled_([a-z_]+?)(?:_per_issue_active)?\.ratio$`)

// stalls are k's stall reasons, largest first. "selected" is left out: it
// is the cycle a warp issues, not a stall.
func stalls(k Kernel) []Stall {
	var out []Stall
	total := 0.0
	for _, name := range sortedMetricNames(k) {
		m := stallMetric.FindStringSubmatch(name)
		if m == nil || m[1] == "selected" {
			continue
		}
		v, ok := k.Value(name)
		if !ok {
			continue
		}
		out = append(out, Stall{Metric: name, Reason: strings.ReplaceAll(m[1], "_", " "), PerIssue: v, rawReason: m[1]})
		total += v
	}
	for i := range out {
		if total > 0 {
			out[i].Share = out[i].PerIssue / total
		}
	}
	slices.SortStableFunc(out, func(a, b Stall) int { return cmp.Compare(b.PerIssue, a.PerIssue) })
	return out
}

func sortedMetricNames(k Kernel) []string {
	names := make([]string, 0, len(k.Metrics))
	for name := range k.Metrics {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// KernelProfile is what the profile table shows of one kernel.
type KernelProfile struct {
	Kernel  Kernel
	Figures []Figure
	Limiter *Limiter
	Stalls  []Stall // every reason, largest first
	Hints   []Hint
}

// Profile reads k's profile and the hints it triggers.
func Profile(k Kernel) KernelProfile {
	p := KernelProfile{Kernel: k}
	for _, r := range profileReading {
		p.Figures = append(p.Figures, read(k, r))
	}
	if l, ok := occupancyLimiter(k); ok {
		p.Limiter = &l
	}
	p.Stalls = stalls(k)
	p.Hints = hints(p)
	return p
}

// figure is p's figure of reading r.
func (p KernelProfile) figure(r Reading) Figure {
	for _, f := range p.Figures {
		if f.Reading.Name == r.Name {
			return f
		}
	}
	return Figure{Reading: r, Value: math.NaN()}
}

// stall is p's stall of the given reason (ncu's name, e.g. "mio_throttle").
func (p KernelProfile) stall(reason string) (Stall, bool) {
	for _, s := range p.Stalls {
		if s.rawReason == reason {
			return s, true
		}
	}
	return Stall{}, false
}
