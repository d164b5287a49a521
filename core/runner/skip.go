package runner

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/sdk"
)

// rowSkipReason is why a row will not run its case, decided before any
// input is generated: the variant's declared capabilities, then whether the
// case can fit in this machine's memory or the backend's device memory,
// then whether its Run could finish within call_timeout even at the
// device's peak.
func (r *runner) rowSkipReason(rw row, c op.Case) string {
	if reason := ops.Unsupported(rw.variant, c); reason != "" {
		return reason
	}
	device := rw.backend.description.Device
	if reason := memoryShortfall(ops.Of(c).Work(c, nil), device, availableHostMemory()); reason != "" {
		return reason
	}
	return beyondDeadline(ops.Of(c).Work(c, nil), r.cfg.Suite.Measurement, r.cfg.Suite.CallTimeout, ceilingsFor(device, r.cpuCeilings))
}

// beyondDeadline says why a Run cannot finish in time: its warm-up runs,
// minimum samples and call samples, each taking at least the case's FLOPs
// at the device's peak, add up to more than the call deadline.
func beyondDeadline(work op.Work, m sdk.Measurement, deadline time.Duration, c Ceilings) string {
	if c.TFLOPS <= 0 {
		return ""
	}
	fastest := work.FLOPs / (c.TFLOPS * 1e12)
	calls := max(m.WarmupRuns, 0) + max(m.MinSamples, 1) + max(m.CallSamples, 0)
	if need := fastest * float64(calls); need > deadline.Seconds() {
		return fmt.Sprintf("would take at least %s for its %d timed and warm-up calls even at %s of %.4g TFLOP/s; call_timeout is %s",
			time.Duration(need*float64(time.Second)).Round(time.Second), calls, c.Source, c.TFLOPS, deadline)
	}
	return ""
}

// hostBytesPerCase is the host memory a case takes: the inputs in the
// host's memory and in the row's files (tmpfs is memory), the output read
// back, and about as much again for a backend on the same machine.
func hostBytesPerCase(work op.Work) float64 { return 3 * work.Bytes }

// memoryShortfall says why a case cannot fit: in the host's available
// memory (available is 0 when unknown), or in the device memory of a GPU
// backend, which must at least hold the case's inputs and outputs.
func memoryShortfall(work op.Work, device sdk.Device, available int64) string {
	if need := hostBytesPerCase(work); available > 0 && need > float64(available) {
		return fmt.Sprintf("needs about %s of host memory for its inputs and outputs; %s available", gib(need), gib(float64(available)))
	}
	if need := work.Bytes; device.Kind == "gpu" && device.MemoryBytes > 0 && need > float64(device.MemoryBytes) {
		return fmt.Sprintf("needs at least %s of device memory for its inputs and outputs; %s has %s", gib(need), device.Name, gib(float64(device.MemoryBytes)))
	}
	return ""
}

func gib(bytes float64) string { return fmt.Sprintf("%.1f GiB", bytes/(1<<30)) }

// availableHostMemory is MemAvailable from /proc/meminfo, in bytes; 0 when
// unknown.
func availableHostMemory() int64 {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
