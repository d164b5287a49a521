package runner

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/sdk"
)

// The host's own clock (docs/measurement.md, "The host's clock").
//
// Every time in a row comes from the plugin, which could divide its clock,
// slow it down, or time less work than it claims. After a row's timing the
// host checks it with a batch of its own:
//
//  1. it writes inputs that no plugin has seen, of the case's shape and
//     distribution but drawn from a seed chosen now, from the operating
//     system's random source, and has the row Prepare them;
//  2. it asks for exactly N timed calls, with no warm-up and no call-time
//     samples, in one Run, and times that Run with its own monotonic clock;
//  3. it checks the output the last of those calls left against the fp64
//     reference of the fresh inputs: an output cached from the known
//     inputs, or a timed path that does less of the work, fails here;
//  4. it reconciles the figures (judgeBatch): N calls cannot take the host
//     more than N × (clockFactor × kernel + per-call slack) + a fixed
//     slack, where kernel is what the backend reported for those calls;
//     and on a GPU that kernel time may not stray more than driftFactor
//     from the row's. A row that breaks a rule in each of batchTries tries
//     is an ERROR ("clock: ..."), never a speedup or a baseline.
//
// The bound holds for an honest backend because each of the N calls does
// the work whose time it reported (kernel), plus what an honest sample
// adds around it: the launch, the events or CUPTI, the sleep kernel that
// hides host gaps (slack per call), and the RPC, the output file and the
// buffers Run sets up once (fixed slack). A backend that reports less than
// 1/clockFactor of its real time is caught wherever the real time of its N
// calls exceeds those slacks; below that the host's clock cannot tell, and
// the GPU's own clock (ncu, verify-timing) is the check.

// clockFactor is how much longer than its reported kernel time a call may
// take the host, on top of the slacks: the spread of an honest kernel
// between two Runs (placements, clocks, a noisy neighbour) stays far below.
const clockFactor = 3.0

// driftFactor is how far the kernel time a backend reports in the host's
// batch may stray from the row's on a GPU, where a kernel's time is device
// time and moves with clocks and placements by percents.
const driftFactor = 4.0

// batchTarget is about how long the host's batch should take: long enough
// that the fixed slack does not hide the calls, short enough to cost little
// per row. N is chosen from the checked call's time, measured by the host.
const (
	batchTarget = 100 * time.Millisecond
	batchTries  = 3
)

// clockSlack is what an honest backend may add around its kernel time, per
// call and once per Run, on a device of that kind. Measured on the CPU and
// on the H100 with every backend (docs/measurement.md) and set well above
// the largest excess seen.
type clockSlack struct {
	perCall, perRun time.Duration
	// perOutputByte is the time allowed for writing the output file (and
	// copying it off the GPU) once per Run.
	perOutputByte time.Duration
	// maxCalls bounds N on a GPU (batchCalls).
	maxCalls int
}

func slackFor(device sdk.Device) clockSlack {
	// A GPU the host does not believe in (ceilingsFor) earns no GPU slack.
	if believedGPU(device) {
		// On the H100 (2026-11-25) an honest call of a microsecond kernel
		// took the host 2.3 to 4.4 ms in the batch (events or CUPTI, the
		// sleep or spin kernel, Python dispatch), sdpa-efficient's 11 ms,
		// and the first call on fresh inputs up to 60 ms more.
		return clockSlack{perCall: 20 * time.Millisecond, perRun: 200 * time.Millisecond, perOutputByte: 10 * time.Nanosecond, maxCalls: 4}
	}
	// On a CPU an honest call took the host at most 1.4 ms more than its
	// kernel time at the default suite's shapes on two quiet cores; on two
	// cores shared with a parallel go test, a wake-up of a Python worker can
	// wait a scheduler slice of several ms, so the slacks are set for that.
	return clockSlack{perCall: 10 * time.Millisecond, perRun: 100 * time.Millisecond, perOutputByte: 10 * time.Nanosecond}
}

// batchCalls is N. On a GPU: enough calls to fill batchTarget at the
// checked call's host time, at least 1 and at most maxCalls (a GPU call
// costs milliseconds of host time whatever its kernel, so more buys
// nothing there). On a CPU: the marginal rule's n at the reported kernel
// time (marginalCalls), as this batch is also its short one.
func batchCalls(checkedCall, reported time.Duration, device sdk.Device) int {
	if !believedGPU(device) {
		return marginalCalls(reported)
	}
	most := int64(slackFor(device).maxCalls)
	if checkedCall <= 0 {
		return int(most)
	}
	return int(min(max(int64(batchTarget/checkedCall), 1), most))
}

// batchMeasurement asks for exactly n timed calls, hot, and nothing else.
func batchMeasurement(n int) sdk.Measurement {
	return sdk.Measurement{MinSamples: n, MaxSamples: n, L2: sdk.L2Hot, Placements: 1, TargetNoise: 0, NoCrossCheck: true}
}

// ClockBound is the most an honest backend's n calls may take the host,
// given the kernel time it reported (docs/measurement.md).
func ClockBound(n int, kernel time.Duration, outputBytes int64, device sdk.Device) time.Duration {
	perCall := time.Duration(clockFactor*float64(kernel)) + slackFor(device).perCall
	return time.Duration(n)*perCall + runSlack(outputBytes, device)
}

// runSlack is what an honest Run may cost the host once, whatever its
// calls: the per-Run slack and the output file's allowance.
func runSlack(outputBytes int64, device sdk.Device) time.Duration {
	s := slackFor(device)
	return s.perRun + time.Duration(outputBytes)*s.perOutputByte
}

// hostClockCheck runs the host's batch on fresh inputs for a row whose
// timing was accepted, and records what the host saw in the row's facts.
// checkedCall is the host's time of the checked call (Fetch).
func (r *runner) hostClockCheck(ctx context.Context, b *backend, c op.Case, ws *workspace, checkedCall time.Duration, res *results.Result, made *freshInputs) {
	if len(res.Timings) == 0 || res.Status == results.StatusError {
		return
	}
	parts := newPartClock()
	defer func() {
		if p := r.clock.mark(results.PhaseRecheck, ""); p != nil {
			p.Host = parts.parts
		}
	}()
	api := b.instance.Backend()
	fresh := made.wait()
	if fresh == nil {
		fresh = ops.Of(c).Generate(check.FreshSeed(), c)
	}
	files, err := ws.writeFresh(fresh)
	if err != nil {
		res.Status, res.Reason = results.StatusError, "host: "+err.Error()
		return
	}
	parts.mark(results.RecheckInputs)
	if _, err := call(ctx, r.cfg.Suite.CallTimeout, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, api.Release(ctx, sdk.ReleaseRequest{CaseID: c.ID})
	}); err != nil {
		r.failRow(res, b, "release (before the host's batch)", err)
		return
	}
	parts.mark(results.RecheckRelease)
	prepared, err := call(ctx, r.cfg.Suite.CallTimeout, func(ctx context.Context) (sdk.Prepared, error) {
		return api.Prepare(ctx, ops.PrepareRequest(c, res.Variant, res.Tunables, files, ws.outputs, fresh.SHA256))
	})
	parts.mark(results.RecheckPrepare)
	if err != nil {
		r.failRow(res, b, "prepare (fresh inputs for the host's batch)", err)
		return
	}
	if prepared.LoadedSHA256 != fresh.SHA256 {
		refuse(res, fmt.Sprintf("input hash mismatch on fresh inputs: backend loaded %s, host wrote %s", prepared.LoadedSHA256, fresh.SHA256))
		return
	}
	reported := time.Duration(res.Timings[0].Kernel.MedianNs)
	n := batchCalls(checkedCall, reported, b.description.Device)
	// A batch that breaks the bound is run again, up to batchTries in all,
	// before the row is blamed: a stall of a busy machine must not make a
	// finding. A backend that lies breaks it every time.
	var best batchVerdict
	var shorts []timedBatch
	tries := 0
	for attempt := 1; attempt <= batchTries; attempt++ {
		tries = attempt
		wall, samples, ok := r.hostBatch(ctx, b, c, ws, n, res)
		if !ok {
			return
		}
		shorts = append(shorts, timedBatch{wall, samples})
		v := judgeBatch(n, wall, sdk.MedianDuration(samples.KernelTimes), reported, totalBytes(ws.timed), b.description.Device)
		if attempt == 1 || v.excess < best.excess {
			best = v
		}
		if v.reason == "" {
			break
		}
	}
	best.tries = tries
	parts.mark(results.RecheckBatch)
	addFacts(res, map[string]string{
		"host_batch_calls":     strconv.Itoa(n),
		"host_batch_wall_ns":   strconv.FormatInt(best.wall.Nanoseconds(), 10),
		"host_batch_bound_ns":  strconv.FormatInt(best.bound.Nanoseconds(), 10),
		"host_batch_kernel_ns": strconv.FormatInt(best.batchKernel.Nanoseconds(), 10),
		"host_batch_tries":     strconv.Itoa(best.tries),
		"host_checked_call_ns": strconv.FormatInt(checkedCall.Nanoseconds(), 10),
		"fresh_input_sha256":   fresh.SHA256,
	})
	if best.reason == "" && !believedGPU(b.description.Device) {
		marginal, ok := r.marginalCheck(ctx, b, c, ws, n, shorts, res)
		parts.mark(results.RecheckMarginal)
		if !ok {
			return
		} else if marginal.reason != "" {
			best = marginal
		}
	}
	r.checkFreshOutput(c, fresh, ws, res)
	parts.mark(results.RecheckCheck)
	if best.reason != "" {
		if res.Status == results.StatusPass && believedGPU(b.description.Device) {
			// The timing audit may reconcile it with the device's clock.
			addFacts(res, map[string]string{results.HostClockFact: results.HostClockRefused})
		}
		refuse(res, fmt.Sprintf("%s%s, at best of %d tries (docs/measurement.md, \"The host's clock\")", ClockReasonPrefix, best.reason, best.tries))
	}
}

// ClockReasonPrefix begins the reason of a row the host's clock refused.
const ClockReasonPrefix = "clock: "

// The marginal rule, on a CPU. The batch rule above must allow each Run a
// fixed slack (the RPC, a worker's wake-up on a loaded machine, the output
// file) and each call a slack of its own, which together hide a lie about
// a kernel of a few milliseconds or less. Two batches on the same fresh
// inputs, of n and 2n calls, cost the host the same fixed part; their
// difference is what n calls cost, with nothing else in it. Each of those
// calls is the work the backend timed plus its own loop around it (the
// clock read, the Python dispatch): honest, at most marginalFactor × the
// kernel time it reported plus marginalSlack. The kernel time and the
// batches are taken together, so a loaded machine slows both.
const (
	marginalFactor   = 2.0
	marginalSlack    = 150 * time.Microsecond
	marginalTarget   = 40 * time.Millisecond
	marginalMaxCalls = 512
	// marginalStall is one stall of a loaded machine (a scheduler slice
	// or a page-cache write-back) that the long batch may take in its gaps
	// and the short one not: allowed once per pair, so marginalStall / n
	// a call.
	marginalStall = 20 * time.Millisecond
)

// believedGPU reports whether the host holds the backend to a GPU's rules:
// it claims a GPU the host sees (unseenGPU).
func believedGPU(d sdk.Device) bool { return d.Kind == "gpu" && unseenGPU(d) == "" }

// marginalCalls is n: enough calls at the row's reported kernel time to
// fill marginalTarget, at least 1 and at most marginalMaxCalls. A backend
// that reports less than it takes is given more calls, and pays for them.
func marginalCalls(reported time.Duration) int {
	if reported <= 0 {
		return marginalMaxCalls
	}
	return int(min(max(int64(marginalTarget/reported), 1), marginalMaxCalls))
}

// timedBatch is one of the host's batches of calls, short (n calls) or
// long (2n): the host's time of it and the samples.
type timedBatch struct {
	wall    time.Duration
	samples sdk.Samples
}

// marginalCheck runs a batch of 2n calls, up to batchTries times, and
// judges each against the quickest of every batch of n calls run so far
// (marginalVerdict); shorts are the batch rule's, of n calls on the same
// fresh inputs. After a long batch it runs one more short batch whenever
// the quickest so far took the host longer a call than the long one
// (shortLooksSlowed), and on every try after the first. It returns the
// verdict of the best try; ok is false when the row is finished (an error
// or refused samples, recorded in res).
func (r *runner) marginalCheck(ctx context.Context, b *backend, c op.Case, ws *workspace, n int, shorts []timedBatch, res *results.Result) (batchVerdict, bool) {
	var best batchVerdict
	for attempt := 1; attempt <= batchTries; attempt++ {
		wall, samples, ok := r.hostBatch(ctx, b, c, ws, 2*n, res)
		if !ok {
			return best, false
		}
		long := timedBatch{wall, samples}
		if attempt > 1 || shortLooksSlowed(shorts, long) {
			if wall, samples, ok = r.hostBatch(ctx, b, c, ws, n, res); !ok {
				return best, false
			}
			shorts = append(shorts, timedBatch{wall, samples})
		}
		v := marginalVerdict(n, shorts, long, totalBytes(ws.timed), b.description.Device)
		if attempt == 1 || v.excess < best.excess {
			best = v
		}
		best.tries = attempt
		if v.reason == "" {
			break
		}
	}
	addFacts(res, map[string]string{
		"host_marginal_calls":     strconv.Itoa(n),
		"host_marginal_call_ns":   strconv.FormatInt(best.wall.Nanoseconds(), 10),
		"host_marginal_bound_ns":  strconv.FormatInt(best.bound.Nanoseconds(), 10),
		"host_marginal_kernel_ns": strconv.FormatInt(best.batchKernel.Nanoseconds(), 10),
		"host_marginal_tries":     strconv.Itoa(best.tries),
		"host_marginal_shorts":    strconv.Itoa(len(shorts)),
	})
	return best, true
}

// shortSlowedShare is how much longer a call of the quickest short batch
// may take the host than a call of the long batch before the short batch
// counts as slowed: an honest short batch pays the Run's fixed part (the
// RPC, the output file) over half as many calls, a few percent at
// marginalTarget.
const shortSlowedShare = 0.05

// shortLooksSlowed says whether the quickest of the short batches (n calls
// each) took the host longer a call than the long batch (2n calls), by
// more than shortSlowedShare. Only a slowed short batch lets a lie pass
// (marginalVerdict), and it is slowed, by the machine or by the backend,
// exactly when its calls look dearer than the long batch's: then another
// short batch is run after the long one. An honest short batch is not,
// and the row is spared n more calls.
func shortLooksSlowed(shorts []timedBatch, long timedBatch) bool {
	return 2*float64(quickestBatch(shorts).wall) > (1+shortSlowedShare)*float64(long.wall)
}

// quickestBatch is the one of batches that took the host the least time.
func quickestBatch(batches []timedBatch) timedBatch {
	quickest := batches[0]
	for _, b := range batches[1:] {
		if b.wall < quickest.wall {
			quickest = b
		}
	}
	return quickest
}

// marginalVerdict judges a batch of 2n calls against the quickest of the
// batches of n calls (judgeMarginal), with that batch's own kernel sum.
// A short batch slowed by the machine (a stall, another process, the
// first call on fresh inputs) makes the difference small and would let a
// lie pass; the quickest of several, one of them run after the long
// batch, is slowed only when every one was. An honest backend loses
// nothing by it: a quicker short batch has a smaller kernel sum too, and
// the bound grows with the difference of the sums.
func marginalVerdict(n int, shorts []timedBatch, long timedBatch, outputBytes int64, device sdk.Device) batchVerdict {
	quickest := quickestBatch(shorts)
	v := judgeMarginal(n, quickest.wall, long.wall, sumDurations(quickest.samples.KernelTimes), sumDurations(long.samples.KernelTimes))
	if v.reason != "" {
		return v
	}
	return judgeFixedPart(n, quickest.wall, long.wall, runSlack(outputBytes, device), v)
}

// The fixed part of a Run, on a CPU. A backend can tell the host's short
// batches from its long one by the calls it is asked for (n or 2n), and
// pad every short one with time outside its timed spans: long − short,
// and with it the marginal rule's figure, then shrinks until a lie passes.
// The padding has to be in every short batch and cannot be in the long
// one, so it shows in the fixed part the two batches imply, 2·short −
// long (what a batch of no calls would take). An honest Run's is its RPC,
// its output file and whatever untimed calls it makes once per Run, plus
// what stall slowed the quickest short batch; a lie of 8× about a kernel
// of a millisecond or less needs about the whole long batch there (and
// about larger kernels the batch rule catches it first).
const fixedPartShare = 0.1

// judgeFixedPart holds the fixed part implied by the quickest short batch
// of n calls and the long batch of 2n (2·short − long) to the batch rule's
// once-per-Run allowance (runSlack), plus two calls (long / n: untimed
// calls an honest backend may make once per Run), plus fixedPartShare of
// the long batch (CPU noise grows with the calls). v is the marginal
// rule's verdict, which it returns when the fixed part is within the
// bound.
func judgeFixedPart(n int, short, long, runSlack time.Duration, v batchVerdict) batchVerdict {
	fixed := 2*short - long
	bound := runSlack + long/time.Duration(n) + time.Duration(fixedPartShare*float64(long))
	if fixed <= bound {
		return v
	}
	v.excess = max(v.excess, float64(fixed)/float64(bound))
	v.reason = fmt.Sprintf("the host's batches of %d and %d calls on fresh inputs took %v and %v: a batch of no calls would take %v, "+
		"and an honest Run's fixed part is at most %v (the backend's short batches took longer than their calls explain)",
		n, 2*n, short.Round(time.Microsecond), long.Round(time.Microsecond), fixed.Round(time.Microsecond), bound.Round(time.Microsecond))
	return v
}

// judgeMarginal holds what n more calls cost the host (long − short, the
// host's times of batches of 2n and n calls) to the marginal rule, given
// the sums of the kernel samples the backend reported for each batch.
// The kernel time of the n more calls is the difference of the sums, not
// of medians: on a loaded machine a call preempted inside its timed span
// is in both the host's time and the backend's sum, where a median would
// leave it out. Where noise makes that difference smaller than the long
// batch's mean, the mean is taken: a backend that lies reports both
// smaller alike. The verdict's wall, bound and kernel are per call.
func judgeMarginal(n int, short, long, shortSum, longSum time.Duration) batchVerdict {
	calls := time.Duration(n)
	more := long - short
	kernel := max((longSum-shortSum)/calls, longSum/(2*calls))
	v := batchVerdict{wall: more / calls, batchKernel: kernel,
		bound: time.Duration(marginalFactor*float64(kernel)) + marginalSlack + marginalStall/calls}
	v.excess = float64(v.wall) / float64(v.bound)
	if v.wall > v.bound {
		v.reason = fmt.Sprintf("%d more calls on fresh inputs took the host %v more (%v a call, the difference of batches of %d and %d calls); "+
			"the backend reported %v a call for them, and an honest call takes the host at most %v", n, more.Round(time.Microsecond),
			v.wall.Round(time.Microsecond), n, 2*n, kernel, v.bound.Round(time.Microsecond))
	}
	return v
}

// sumDurations is the sum of ds.
func sumDurations(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum
}

// batchVerdict is what the host made of one batch: reason is "" when it
// squares with the row's figures; excess orders tries (the least is kept).
type batchVerdict struct {
	wall, bound, batchKernel time.Duration
	excess                   float64
	reason                   string
	tries                    int
}

// judgeBatch holds one batch of n calls, which took the host wall and for
// which the backend reported a median kernel time of batchKernel, to two
// rules:
//
//  1. at the same moment: n calls cannot take the host more than
//     ClockBound of the kernel time the backend reported for them. Both
//     figures are taken together, so a machine that is busy slows both;
//  2. across the row, on a GPU: the batch's kernel time may not exceed
//     driftFactor × the row's reported median (plus the per-call slack): a
//     backend that is honest only when the host watches is caught here.
//     Not on a CPU, where a kernel's time is wall time and a busy machine
//     moves it a hundredfold between two Runs (seen with torch on two
//     loaded cores), so no factor separates a lie from the load.
func judgeBatch(n int, wall, batchKernel, reported time.Duration, outputBytes int64, device sdk.Device) batchVerdict {
	v := batchVerdict{wall: wall, batchKernel: batchKernel, bound: ClockBound(n, batchKernel, outputBytes, device)}
	v.excess = float64(wall) / float64(v.bound)
	drift := time.Duration(driftFactor*float64(reported)) + slackFor(device).perCall
	switch {
	case wall > v.bound:
		v.reason = fmt.Sprintf("the host timed %d calls on fresh inputs at %v (%v a call); the backend reported %v a call for them, "+
			"and %d honest calls take at most %v", n, wall.Round(time.Microsecond), (wall / time.Duration(n)).Round(time.Microsecond),
			batchKernel, n, v.bound.Round(time.Microsecond))
	case believedGPU(device) && batchKernel > drift:
		v.excess = max(v.excess, float64(batchKernel)/float64(drift))
		v.reason = fmt.Sprintf("the backend reported %v a call while the host timed its calls on fresh inputs, "+
			"but %v for the row: more than %.0f× apart", batchKernel, reported, driftFactor)
	}
	return v
}

// hostBatch runs the host's n timed calls in one Run and returns the
// host's time of it and the backend's samples; ok is false when the row is
// finished (an error or refused samples, recorded in res).
func (r *runner) hostBatch(ctx context.Context, b *backend, c op.Case, ws *workspace, n int, res *results.Result) (time.Duration, sdk.Samples, bool) {
	api := b.instance.Backend()
	m := batchMeasurement(n)
	if err := clearOutputs(ws.timed); err != nil {
		res.Status, res.Reason = results.StatusError, "host: "+err.Error()
		return 0, sdk.Samples{}, false
	}
	start := time.Now()
	samples, err := call(ctx, r.cfg.Suite.CallTimeout, func(ctx context.Context) (sdk.Samples, error) {
		return api.Run(ctx, runRequest(c, m, ws.timed))
	})
	wall := time.Since(start)
	if err != nil {
		r.failRow(res, b, "run (the host's batch)", err)
		return 0, sdk.Samples{}, false
	}
	if reason := SampleRuleViolation(samples, m); reason != "" {
		refuse(res, "the host's batch: samples refused: "+reason)
		return 0, sdk.Samples{}, false
	}
	return wall, samples, true
}

// checkFreshOutput checks what the last call of the host's batch left
// against the fresh inputs. It fails a row that passed: the backend's timed
// path is right only on inputs it has seen.
func (r *runner) checkFreshOutput(c op.Case, fresh *op.Inputs, ws *workspace, res *results.Result) {
	report, _, reason := r.checkOutputFiles(c, fresh, ws.timed, "Run wrote no output file at RunRequest.Output for the host's batch")
	if report.Verdict != "" { // the output was there to check
		addFacts(res, map[string]string{"fresh_rel_l2_err": strconv.FormatFloat(report.RelL2Err, 'g', 3, 64)})
	}
	if reason != "" && res.Status == results.StatusPass {
		res.Status = results.StatusFail
		res.Reason = "the output of a timed call on fresh inputs is wrong, though the checked call's was right: " + reason
	}
}

// writeFresh writes the fresh inputs beside the row's own, read-only, and
// names them with the row's output files.
func (w *workspace) writeFresh(in *op.Inputs) ([]sdk.TensorFile, error) {
	files := ops.InputFiles(in, w.dir, "fresh-")
	return files, writeInputs(files, in)
}
