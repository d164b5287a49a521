package runner

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/flashcore/bench/core/stats"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/sdk"
)

// rowSkipReason is why a row will not run its case, decided before any
// input is generated: the variant's declared capabilities, then whether the
// case can fit in this machine's memory or the backend's device memory.
func rowSkipReason(rw row, c suite.Case) string {
	if reason := rw.variant.Capabilities.Unsupported(c.Shape); reason != "" {
		return reason
	}
	return memoryShortfall(c.Shape, rw.backend.description.Device, availableHostMemory())
}

// hostBytesPerCase is the host memory a case takes: the inputs in the
// host's memory and in the row's files (tmpfs is memory), the output read
// back, and about as much again for a backend on the same machine.
func hostBytesPerCase(s sdk.Shape) float64 { return 3 * stats.Bytes(s) }

// memoryShortfall says why a case cannot fit: in the host's available
// memory (available is 0 when unknown), or in the device memory of a GPU
// backend, which must at least hold Q, K, V and O.
func memoryShortfall(s sdk.Shape, device sdk.Device, available int64) string {
	if need := hostBytesPerCase(s); available > 0 && need > float64(available) {
		return fmt.Sprintf("needs about %s of host memory for its inputs and outputs; %s available", gib(need), gib(float64(available)))
	}
	if need := stats.Bytes(s); device.Kind == "gpu" && device.MemoryBytes > 0 && need > float64(device.MemoryBytes) {
		return fmt.Sprintf("needs at least %s of device memory for Q, K, V and O; %s has %s", gib(need), device.Name, gib(float64(device.MemoryBytes)))
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
