package runner

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flashcore/bench/core/devices"
	"github.com/flashcore/bench/core/stats"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

// The host's own rules for a Run's samples (docs/measurement.md, "What the
// host refuses"). A backend reports its samples; these rules decide whether
// they can be true. A sample set that breaks one makes the row an ERROR with
// the figures in its reason, and such a row is never a speedup baseline.

// SampleRuleViolation checks the sample counts and values against the
// measurement the host asked for: at least min_samples and at most
// max_samples kernel times, placement blocks that split them, call_samples
// call times, and every time positive and below an hour. It returns ""
// when the samples keep the rules, else why not. The conformance kit
// checks backends by it too.
func SampleRuleViolation(s sdk.Samples, m sdk.Measurement) string {
	switch n := len(s.KernelTimes); {
	case n < max(m.MinSamples, 1):
		return fmt.Sprintf("returned %d kernel-time samples; the suite asks for at least min_samples = %d", n, max(m.MinSamples, 1))
	case m.MaxSamples > 0 && n > m.MaxSamples:
		return fmt.Sprintf("returned %d kernel-time samples; the suite allows at most max_samples = %d", n, m.MaxSamples)
	}
	if why := blocksViolation(s.KernelBlocks, len(s.KernelTimes), sdk.Placements(m)); why != "" {
		return why
	}
	if n := len(s.CallTimes); n < m.CallSamples {
		return fmt.Sprintf("returned %d call-time samples; the suite asks for call_samples = %d", n, m.CallSamples)
	}
	for _, set := range []struct {
		name  string
		times []time.Duration
	}{{"kernel", s.KernelTimes}, {"call", s.CallTimes}, {"cross-check", s.CrossCheckTimes}} {
		for i, d := range set.times {
			if d <= 0 || d > time.Hour {
				return fmt.Sprintf("%s-time sample %d is %v: every sample must be positive and under an hour", set.name, i+1, d)
			}
		}
	}
	return ""
}

// StopRuleViolation checks that each block of a Run's kernel samples
// ends where the contract's stopping rule (sdk.CollectSamples, and its
// Python twin) ends it, so that the count is the harness's rule's and not
// the backend's choice: the rule stops at the first sample count of at
// least min_samples where sdk.NoiseStops, at max_samples, or once the
// block's time cap has passed. A block that goes on past the first point where the noise
// target was met, or stops short of both the target and max_samples, is
// refused; and the time caps of the blocks that stopped short must fit in
// runWall, the host's own clock of the Run ("" when runWall is 0: no
// clock). Where the Run says it reports other figures of the same samples
// than those the rule saw (fact cupti_fallback: the CUDA events, where
// CUPTI's records missed device time; the cross-check then holds CUPTI's),
// either sequence may keep the rule. A Run whose buffers could not move
// (fewer blocks than placements: a block then holds two blocks' rules) is
// not replayed.
func StopRuleViolation(s sdk.Samples, m sdk.Measurement, runWall time.Duration) string {
	why := stopRuleViolation(s.KernelTimes, s.KernelBlocks, m, runWall)
	if why != "" && s.Facts[sdk.FactCUPTIFallback] != "" && len(s.CrossCheckTimes) == len(s.KernelTimes) &&
		stopRuleViolation(s.CrossCheckTimes, s.KernelBlocks, m, runWall) == "" {
		return ""
	}
	return why
}

// roundingNoise is how far the noise the rule saw may lie from the noise
// of the samples the host receives: a twin may judge figures with
// fractions of a nanosecond (a sample's calls' mean), which travel
// rounded to whole nanoseconds, and half a nanosecond on each of the two
// order statistics and on the median moves the noise by at most about
// 1 ns over the median. Twice that is allowed, either way.
func roundingNoise(samples []time.Duration) float64 {
	median := sdk.MedianDuration(samples)
	if median <= 0 {
		return 0
	}
	return 2 / float64(median)
}

func stopRuleViolation(samples []time.Duration, blocks []int, m sdk.Measurement, runWall time.Duration) string {
	measurements := []sdk.Measurement{m}
	switch n := sdk.Placements(m); {
	case len(blocks) == 0:
		blocks = []int{len(samples)}
	case len(blocks) < n:
		return ""
	default:
		measurements = measurements[:0]
		for i := range blocks {
			measurements = append(measurements, sdk.BlockMeasurement(m, i))
		}
	}
	var capped time.Duration
	start := 0
	for i, count := range blocks {
		if start+count > len(samples) {
			return "" // blocksViolation says so
		}
		block, bm := samples[start:start+count], measurements[i]
		start += count
		lo, hi := sdk.SampleBounds(bm)
		name := "the samples"
		if len(blocks) > 1 {
			name = fmt.Sprintf("placement block %d", i+1)
		}
		switch {
		case count < lo:
			return fmt.Sprintf("%s hold %d kernel-time samples; the stopping rule takes at least %d", name, count, lo)
		case count > hi:
			return fmt.Sprintf("%s hold %d kernel-time samples; the stopping rule takes at most %d", name, count, hi)
		}
		for k := lo; k < count; k++ {
			if sdk.NoiseStops(block[:k], bm.TargetNoise-roundingNoise(block[:k])) {
				return fmt.Sprintf("%s went on to %d kernel-time samples, but the stopping rule ends at %d, where the noise (%.3g%%) "+
					"was below target_noise (%.3g%%): the harness's rule chooses the count, not the backend",
					name, count, k, 100*sdk.RelativeNoise(block[:k]), 100*bm.TargetNoise)
			}
		}
		noiseMet := sdk.NoiseStops(block, bm.TargetNoise+roundingNoise(block))
		if count < hi && !noiseMet {
			if bm.TimeCap <= 0 {
				return fmt.Sprintf("%s stopped at %d kernel-time samples, short of max_samples (%d) and of the noise target, with no time cap",
					name, count, hi)
			}
			capped += bm.TimeCap
		}
	}
	if runWall > 0 && capped > runWall {
		return fmt.Sprintf("the Run stopped sampling short of max_samples and of the noise target, which only its time cap allows "+
			"(%v in all), but the host timed the whole Run at %v: the harness's rule chooses the count, not the backend", capped, runWall)
	}
	return ""
}

// blocksViolation checks a backend's placement blocks: at most as many as
// the measurement asks for, each with a sample, together all the samples.
func blocksViolation(blocks []int, samples, placements int) string {
	if len(blocks) == 0 {
		return ""
	}
	if len(blocks) > placements {
		return fmt.Sprintf("returned %d placement blocks; the suite asks for placements = %d", len(blocks), placements)
	}
	sum := 0
	for i, b := range blocks {
		if b < 1 {
			return fmt.Sprintf("placement block %d holds %d samples: every block holds one", i+1, b)
		}
		sum += b
	}
	if sum != samples {
		return fmt.Sprintf("returned placement blocks of %d samples in all, but %d kernel-time samples", sum, samples)
	}
	return ""
}

// Ceilings are the fastest a device can possibly be: no correct attention
// kernel does more FLOP/s, or moves its least traffic faster, than these.
type Ceilings struct {
	// TFLOPS is the dense fp16/bf16 tensor peak, in 10^12 FLOP/s.
	TFLOPS float64
	// GBps is the memory bandwidth peak, in 10^9 B/s; 0 when none applies.
	GBps float64
	// Source says where the figures come from, for reasons.
	Source string
}

// Universal ceilings bound any device whose own figures are missing or
// claimed higher: above every accelerator shipping in 2026 (the fastest
// dense fp16 peaks are about 2.5 PFLOP/s, the fastest HBM about 8 TB/s).
const (
	universalGPUTFLOPS = 5000
	universalGPUGBps   = 16000
)

// ceilingsFor bounds a backend's device. The device description comes from
// the plugin itself, so it can only ever lower the host's own bound: a GPU
// is bounded by the peaks it reports (computed by the plugin from its SM
// count and maximum clocks), never above the universal ceiling; a CPU by the
// host's own estimate of this machine's peak, whatever the plugin says.
func ceilingsFor(d sdk.Device, cpu Ceilings) Ceilings {
	if d.Kind != "gpu" {
		return cpu
	}
	if why := unseenGPU(d); why != "" {
		cpu.Source += " (" + why + ")"
		return cpu
	}
	c := Ceilings{TFLOPS: universalGPUTFLOPS, GBps: universalGPUGBps, Source: "the universal accelerator ceiling"}
	if d.PeakTFLOPS > 0 && d.PeakTFLOPS < c.TFLOPS {
		c.TFLOPS, c.Source = d.PeakTFLOPS, d.Name+" peak"
	}
	if d.PeakGBps > 0 && d.PeakGBps < c.GBps {
		c.GBps = d.PeakGBps
	}
	return c
}

// unseenGPU says why the host does not believe a backend's claimed GPU,
// or "" when it does. Where the NVIDIA driver answers (nvidia-smi lists
// GPUs), the backend must name one of them by its UUID, which the driver
// gave the plugin (sdk.Device.UUID); a device node alone proves nothing,
// as anyone can make an empty /dev/nvidiactl. Another vendor's GPU is
// believed where its device nodes exist. The device's name is not
// matched: MIG slices and drivers name one GPU in several ways.
func unseenGPU(d sdk.Device) string {
	uuids := hostGPUUUIDs()
	switch {
	case len(uuids) > 0 && d.UUID == "":
		return "the backend claims a GPU but gives no UUID to show which; the host's driver lists " + strings.Join(uuids, ", ")
	case len(uuids) > 0 && !slices.ContainsFunc(uuids, func(u string) bool { return devices.SameUUID(u, d.UUID) }):
		return fmt.Sprintf("the backend claims GPU %s, which is none of the host's: %s", d.UUID, strings.Join(uuids, ", "))
	case len(uuids) > 0:
		return ""
	}
	for _, node := range []string{"/dev/kfd", "/dev/dxg"} { // AMD, WSL
		if _, err := os.Stat(node); err == nil {
			return ""
		}
	}
	return "the backend claims a GPU, but this machine's NVIDIA driver lists none"
}

// hostGPUUUIDs are the UUIDs of the GPUs (and MIG instances) the NVIDIA
// driver lists, asked once per process.
var hostGPUUUIDs = sync.OnceValue(func() []string { return devices.UUIDs(context.Background()) })

// cpuFLOPPerCycle is a generous bound on a core's dense FLOP per cycle for
// any floating-point type attention uses: 2048 with AMX tiles (bf16), 128
// with AVX-512 fp16, 64 with AVX-512, 32 with AVX2 and FMA, else 16. Every
// logical CPU is counted as a full core, so the bound stays generous.
func cpuFLOPPerCycle(flags string) float64 {
	has := func(f string) bool { return slices.Contains(strings.Fields(flags), f) }
	switch {
	case has("amx_bf16") || has("amx_fp16"):
		return 2048
	case has("avx512_fp16"):
		return 128
	case has("avx512f"):
		return 64
	case has("avx2") && has("fma"):
		return 32
	case runtime.GOARCH == "arm64":
		return 64
	}
	return 16
}

// HostCPUCeilings estimates this machine's CPU peak: logical CPUs × maximum
// clock × cpuFLOPPerCycle. The clock is cpufreq's maximum, else 1.5 × the
// fastest clock /proc/cpuinfo shows, else 6 GHz.
func HostCPUCeilings() Ceilings {
	flags, mhz := cpuInfo()
	if max := maxCPUFreqMHz(); max > 0 {
		mhz = max
	} else if mhz > 0 {
		mhz *= 1.5
	} else {
		mhz = 6000
	}
	perCycle := cpuFLOPPerCycle(flags)
	tflops := float64(runtime.NumCPU()) * mhz * 1e6 * perCycle / 1e12
	return Ceilings{TFLOPS: tflops, Source: fmt.Sprintf("this machine's CPU peak (%d CPUs × %.0f MHz × %.0f FLOP/cycle)", runtime.NumCPU(), mhz, perCycle)}
}

func cpuInfo() (flags string, mhz float64) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "", 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "flags", "Features":
			if flags == "" {
				flags = strings.TrimSpace(v)
			}
		case "cpu MHz":
			if x, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				mhz = max(mhz, x)
			}
		}
	}
	return flags, mhz
}

func maxCPUFreqMHz() float64 {
	raw, err := os.ReadFile("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
	if err != nil {
		return 0
	}
	khz, err := strconv.ParseFloat(strings.TrimSpace(string(raw)), 64)
	if err != nil {
		return 0
	}
	return khz / 1000
}

// physicalViolation checks the fastest kernel sample against the device's
// ceilings: more FLOP/s than the peak is impossible; so is moving the
// case's least traffic faster than the memory's peak, where the data cannot
// all sit in the L2 (cold mode, or a working set larger than the L2).
func physicalViolation(work op.Work, s sdk.Samples, mode sdk.L2Mode, device sdk.Device, c Ceilings) string {
	fastest := slices.Min(s.KernelTimes)
	if tflops := stats.TFLOPS(work.FLOPs, fastest); c.TFLOPS > 0 && tflops > c.TFLOPS {
		return fmt.Sprintf("implausible: a %v kernel sample means %.4g TFLOP/s, above %s of %.4g TFLOP/s",
			fastest, tflops, c.Source, c.TFLOPS)
	}
	fromMemory := mode == sdk.L2Cold || (device.L2Bytes > 0 && work.Bytes > float64(device.L2Bytes))
	if gbps := stats.GBps(work.Bytes, fastest); c.GBps > 0 && fromMemory && gbps > c.GBps {
		return fmt.Sprintf("implausible: a %v kernel sample moves the case's %.4g bytes at %.4g GB/s, above the memory peak of %.4g GB/s",
			fastest, work.Bytes, gbps, c.GBps)
	}
	return ""
}

// consistencyViolation compares kernel time with host-inclusive call time:
// a call contains its kernel, so kernel time above call time is impossible.
// Both are noisy, and on a CPU backend they time the same work, so the
// rule compares their distributions with a margin: the kernel's fastest
// tenth (p10) more than ConsistencyMargin slower than the call's slowest
// tenth (p90), and by more than 2 µs.
func consistencyViolation(s sdk.Samples) string {
	if len(s.CallTimes) == 0 {
		return ""
	}
	kernel, call := stats.Summarize(s.KernelTimes), stats.Summarize(s.CallTimes)
	if kernel.P10 > time.Duration(float64(call.P90)*(1+ConsistencyMargin)) && kernel.P10-call.P90 > 2*time.Microsecond {
		return fmt.Sprintf("inconsistent: kernel time (median %v, p10 %v) exceeds the host-inclusive call time that contains it (median %v, p90 %v)",
			kernel.Median, kernel.P10, call.Median, call.P90)
	}
	return ""
}

// ConsistencyMargin is how much slower than the call's p90 the kernel's p10
// may be before the two are called inconsistent.
const ConsistencyMargin = 0.10

// ThrottleDrop is the fall in SM clock between the start and the end of
// sampling beyond which a timing is flagged as throttled (nvbench discards
// such samples with --discard-on-throttle; FlashCore keeps and flags them).
const ThrottleDrop = 0.10

// throttled says whether, and how, the SM clock fell during sampling.
func throttled(s sdk.Samples) (bool, string) {
	if s.Before == nil || s.After == nil || !(s.Before.SMClockMHz > 0) || !(s.After.SMClockMHz > 0) {
		return false, ""
	}
	drop := 1 - s.After.SMClockMHz/s.Before.SMClockMHz
	if drop <= ThrottleDrop {
		return false, ""
	}
	return true, fmt.Sprintf("SM clock fell from %.0f to %.0f MHz (%.0f%%) during sampling", s.Before.SMClockMHz, s.After.SMClockMHz, 100*drop)
}
