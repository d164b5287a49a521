package gate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/suite"
)

// The facts a CUDA backend records for the function it launched
// (cudakit, read from the driver with cuFuncGetAttribute and
// the occupancy calculator). They are repeated here as strings, not
// imported: the host never links the CUDA packages.
const (
	factRegisters     = "registers_per_thread"
	factSpillBytes    = "spill_bytes_per_thread"
	factStaticShared  = "static_shared_bytes"
	factDynamicShared = "dynamic_shared_bytes"
	factBlocksPerSM   = "occupancy_blocks_per_sm"
	factBlock         = "block"
)

func registers(res *results.Result, g suite.Gates) Judgement {
	j := Judgement{Gate: Registers, Limit: fmt.Sprintf("≤ %d", g.MaxRegisters)}
	n, ok := intFact(res, factRegisters)
	if !ok || g.MaxRegisters == 0 {
		j.Verdict, j.Limit = NotJudged, limitOrNone(g.MaxRegisters > 0, j.Limit)
		j.Figure = figureIf(ok, fmt.Sprintf("%d per thread", n))
		return j
	}
	return judged(j, n <= g.MaxRegisters, fmt.Sprintf("%d per thread", n))
}

func spills(res *results.Result, g suite.Gates) Judgement {
	j := Judgement{Gate: Spills, Limit: fmt.Sprintf("≤ %d B", g.MaxSpillBytes)}
	n, ok := intFact(res, factSpillBytes)
	if !ok || g.MaxSpillBytes < 0 {
		j.Verdict, j.Limit = NotJudged, limitOrNone(g.MaxSpillBytes >= 0, j.Limit)
		j.Figure = figureIf(ok, fmt.Sprintf("%d B per thread", n))
		return j
	}
	return judged(j, n <= g.MaxSpillBytes, fmt.Sprintf("%d B per thread", n))
}

func sharedMemory(res *results.Result, g suite.Gates) Judgement {
	j := Judgement{Gate: SharedMem, Limit: fmt.Sprintf("≤ %d B", g.MaxSharedBytes)}
	static, ok1 := intFact(res, factStaticShared)
	dynamic, ok2 := intFact(res, factDynamicShared)
	ok := ok1 && ok2
	figure := fmt.Sprintf("%d B per block", static+dynamic)
	if !ok || g.MaxSharedBytes == 0 {
		j.Verdict, j.Limit = NotJudged, limitOrNone(g.MaxSharedBytes > 0, j.Limit)
		j.Figure = figureIf(ok, figure)
		return j
	}
	return judged(j, static+dynamic <= g.MaxSharedBytes, figure)
}

// occupancy judges the theoretical occupancy: the warps of the blocks one
// SM can hold (the driver's occupancy calculator, for the launched block
// size and shared memory) over the SM's warp slots.
func occupancy(res *results.Result, g suite.Gates, computeCapability string) Judgement {
	j := Judgement{Gate: Occupancy, Limit: fmt.Sprintf("≥ %s", percent(g.MinOccupancy))}
	theoretical, ok := theoreticalOccupancy(res, computeCapability)
	figure := percent(theoretical)
	if !ok || g.MinOccupancy == 0 {
		j.Verdict, j.Limit = NotJudged, limitOrNone(g.MinOccupancy > 0, j.Limit)
		j.Figure = figureIf(ok, figure)
		return j
	}
	return judged(j, theoretical >= g.MinOccupancy, figure)
}

// TheoreticalOccupancy is the fraction of an SM's warp slots that the
// row's launched blocks fill, from its recorded facts; false when the row
// lacks them or the device's architecture is unknown.
func theoreticalOccupancy(res *results.Result, computeCapability string) (float64, bool) {
	blocks, ok1 := intFact(res, factBlocksPerSM)
	threads, ok2 := blockThreads(res.Facts[factBlock])
	slots := MaxThreadsPerSM(computeCapability)
	if !ok1 || !ok2 || slots == 0 {
		return 0, false
	}
	warps := (threads + 31) / 32
	return min(1, float64(blocks*warps*32)/float64(slots)), true
}

// MaxThreadsPerSM is the resident thread limit of an SM (CUDA C
// Programming Guide, "Technical Specifications per Compute Capability");
// 0 for an architecture it does not list.
func MaxThreadsPerSM(computeCapability string) int {
	switch computeCapability {
	case "7.0", "7.2", "8.0", "8.7", "9.0", "10.0", "10.3":
		return 2048
	case "8.6", "8.9", "12.0", "12.1":
		return 1536
	case "7.5":
		return 1024
	}
	return 0
}

func blockThreads(dims string) (int, bool) {
	parts := strings.Split(dims, "x")
	if len(parts) != 3 {
		return 0, false
	}
	n := 1
	for _, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v <= 0 {
			return 0, false
		}
		n *= v
	}
	return n, true
}

func intFact(res *results.Result, key string) (int, bool) {
	v, ok := res.Facts[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

func judged(j Judgement, ok bool, figure string) Judgement {
	j.Figure = figure
	j.Verdict = Pass
	if !ok {
		j.Verdict = Fail
	}
	return j
}

func figureIf(ok bool, figure string) string {
	if ok {
		return figure
	}
	return ""
}

func limitOrNone(set bool, limit string) string {
	if set {
		return limit
	}
	return "none set"
}

func percent(f float64) string { return fmt.Sprintf("%.3g%%", 100*f) }
