package cpureference

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/flashcore/bench/sdk"
)

// This file describes the processor and empties its caches. Reading the
// system files is kept apart from parsing them, so the parsers are tested
// on captured files in testdata/.

// cpuDevice describes the processor the forward pass runs on.
func cpuDevice() sdk.Device {
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo") // absent off Linux: the name falls back
	return sdk.Device{
		Kind:    "cpu",
		Name:    cpuModelName(cpuinfo),
		Runtime: runtime.Version(),
		Cores:   runtime.NumCPU(),
	}
}

// cpuModelName is the first "model name" of a /proc/cpuinfo, or the
// architecture when there is none (arm64 kernels often leave it out).
func cpuModelName(cpuinfo []byte) string {
	scanner := bufio.NewScanner(bytes.NewReader(cpuinfo))
	for scanner.Scan() {
		key, value, found := strings.Cut(scanner.Text(), ":")
		if found && strings.TrimSpace(key) == "model name" && strings.TrimSpace(value) != "" {
			return strings.TrimSpace(value)
		}
	}
	return runtime.GOARCH + " cpu"
}

// fallbackCacheBytes is assumed for the last-level cache when the system
// does not say.
const fallbackCacheBytes = 32 << 20

// lastLevelCacheBytes is the size of the largest cache of CPU 0, from
// Linux's sysfs, or fallbackCacheBytes.
func lastLevelCacheBytes() int {
	sizes, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index*/size")
	largest := 0
	for _, file := range sizes {
		text, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		largest = max(largest, parseCacheSize(string(text)))
	}
	if largest == 0 {
		return fallbackCacheBytes
	}
	return largest
}

// parseCacheSize reads sysfs's cache sizes such as "32K" or "32768K\n";
// it returns 0 for anything else.
func parseCacheSize(text string) int {
	text = strings.TrimSpace(text)
	unit := 1
	switch {
	case strings.HasSuffix(text, "K"):
		unit, text = 1<<10, strings.TrimSuffix(text, "K")
	case strings.HasSuffix(text, "M"):
		unit, text = 1<<20, strings.TrimSuffix(text, "M")
	}
	n, err := strconv.Atoi(text)
	if err != nil || n < 0 {
		return 0
	}
	return n * unit
}

// cacheEvictor empties the CPU caches for the L2-cold measurement mode, the
// CPU's counterpart of a GPU's L2 flush: writing a buffer twice the size of
// the last-level cache leaves none of the case's tensors cached.
type cacheEvictor struct {
	buffer []byte
	pass   byte
}

func newCacheEvictor() *cacheEvictor {
	return &cacheEvictor{buffer: make([]byte, 2*lastLevelCacheBytes())}
}

// evict writes every cache line of the buffer; a new value each pass keeps
// the writes from being skipped. The buffer is written in as many parts
// as the pass has threads (GOMAXPROCS), one goroutine each, like the pass
// itself: the writes then go through every core's own caches too, where
// the pass's threads leave their lines, and take a fraction of the time
// one thread's did: outside the timed span, but inside the run's.
func (e *cacheEvictor) evict() {
	e.pass++
	parts := max(runtime.GOMAXPROCS(0), 1)
	const line = 64
	lines := (len(e.buffer) + line - 1) / line
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*lines/parts*line, min((p+1)*lines/parts*line, len(e.buffer))
		wg.Add(1)
		go func(part []byte, pass byte) {
			defer wg.Done()
			for i := 0; i < len(part); i += line {
				part[i] = pass
			}
		}(e.buffer[lo:hi], e.pass)
	}
	wg.Wait()
}
