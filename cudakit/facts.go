package cudakit

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/sdk"
)

// Keys of the facts every prepared case records.
const (
	FactKernelFunction    = "kernel_function"
	FactKernelSourceHash  = "kernel_source_sha256"
	FactKernelTarget      = "kernel_target" // "sm_90 cubin" or "PTX compute_90 JIT"
	FactCompiler          = "kernel_compiler"
	FactCompilerFlags     = "kernel_compiler_flags"
	FactFatbinArchs       = "kernel_fatbin_archs"
	FactKernelCompileFrom = "kernel_file"      // a kernel compiled at Prepare: its source or binary
	FactKernelCacheHit    = "kernel_cache_hit" // "true" when the compiled kernel came from the cache
	FactRegisters         = "registers_per_thread"
	FactSpillBytes        = "spill_bytes_per_thread"
	FactStaticShared      = "static_shared_bytes"
	FactDynamicShared     = "dynamic_shared_bytes"
	FactMaxThreads        = "max_threads_per_block"
	FactBinaryVersion     = "binary_version"
	FactPTXVersion        = "ptx_version"
	FactOccupancy         = "occupancy_blocks_per_sm"
	FactGrid              = "grid"
	FactBlock             = "block"
	FactTunablePrefix     = "tunable."
	FactSpinMicroseconds  = "spin_us"
	FactSpinRetries       = "spin_retries"
	FactCallsPerSample    = "calls_per_sample"
	FactL2FlushBytes      = "l2_flush_bytes"
	FactTimingKernelsHash = "timing_source_sha256"
	// The device timing's facts (device_timing_cuda.go), named as the
	// Python bridges name theirs: how kernel times were taken, one call's
	// activities with their median device times, why CUPTI was not used,
	// and what the cross-check samples are.
	FactKernelMethod     = "kernel_method"
	FactKernels          = "kernels"
	FactCUPTIFallback    = sdk.FactCUPTIFallback
	FactCrossCheckMethod = "cross_check_method"
	// FactStepPrefix starts the launch facts of a plan's second and later
	// kernels: "step2.registers_per_thread".
	FactStepPrefix = "step"
	// FactScratchBytes is the size of every scratch buffer together;
	// FactScratchPrefix + name is one buffer's size, then "zeroed" or
	// "reset to 0x…" when it is reset before every call. FactOutputReset
	// is the word O is reset to before every call, when it is.
	FactScratchBytes  = "scratch_bytes"
	FactScratchPrefix = "scratch."
	FactOutputReset   = "output_reset"
)

// buildFacts are the facts about the fatbin and the code the driver runs.
func buildFacts(m gpu.Manifest, target gpu.Target) map[string]string {
	return map[string]string{
		FactKernelSourceHash: m.SourceSHA256,
		FactKernelTarget:     target.String(),
		FactCompiler:         m.NVCCVersion,
		FactCompilerFlags:    strings.Join(append(slices.Clone(m.Flags), gencodeFlags(m.Gencode)...), " "),
		FactFatbinArchs:      strings.Join(append(slices.Clone(m.Cubins), m.PTX...), ","),
	}
}

func gencodeFlags(gencode []string) []string {
	flags := make([]string, len(gencode))
	for i, g := range gencode {
		flags[i] = "-gencode " + g
	}
	return flags
}

// launchFacts are the facts about one kernel launch configuration.
func launchFacts(l Launch, res gpu.FuncResources, blocksPerSM int) map[string]string {
	facts := map[string]string{
		FactKernelFunction: l.Function,
		FactRegisters:      strconv.Itoa(res.Registers),
		FactSpillBytes:     strconv.Itoa(res.LocalBytes),
		FactStaticShared:   strconv.Itoa(res.StaticSharedBytes),
		FactDynamicShared:  strconv.Itoa(l.DynamicSharedBytes),
		FactMaxThreads:     strconv.Itoa(res.MaxThreadsPerBlock),
		FactBinaryVersion:  versionString(res.BinaryVersion),
		FactPTXVersion:     versionString(res.PTXVersion),
		FactOccupancy:      strconv.Itoa(blocksPerSM),
		FactGrid:           dimString(l.Grid),
		FactBlock:          dimString(l.Block),
	}
	return facts
}

// tunableFacts record the tunables a case ran with.
func tunableFacts(tunables map[string]string) map[string]string {
	facts := map[string]string{}
	for name, value := range tunables {
		facts[FactTunablePrefix+name] = value
	}
	return facts
}

// resetString says what a buffer is reset to.
func resetString(word uint32) string {
	if word == 0 {
		return "zeroed"
	}
	return fmt.Sprintf("reset to 0x%08x", word)
}

// scratchFacts record the scratch buffers of a plan and the output's reset;
// none without either.
func scratchFacts(l Launch) map[string]string {
	facts := map[string]string{}
	if l.OutputReset {
		facts[FactOutputReset] = resetString(l.OutputWord)
	}
	if len(l.Scratch) == 0 {
		if len(facts) == 0 {
			return nil
		}
		return facts
	}
	facts[FactScratchBytes] = strconv.FormatInt(l.ScratchBytes(), 10)
	for _, s := range l.Scratch {
		v := strconv.FormatInt(s.Bytes, 10)
		if s.Reset {
			v += " " + resetString(s.Word)
		}
		facts[FactScratchPrefix+s.Name] = v
	}
	return facts
}

// versionString turns the driver's 10*major+minor into "major.minor".
func versionString(v int) string { return fmt.Sprintf("%d.%d", v/10, v%10) }

func dimString(d gpu.Dim3) string { return fmt.Sprintf("%dx%dx%d", d.X, d.Y, d.Z) }

// buildString is the Description's Build: which sources and compiler.
func buildString(m gpu.Manifest) string {
	return fmt.Sprintf("kernels %s, %s", short(m.SourceSHA256), m.NVCCVersion)
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

func mergeFacts(dst map[string]string, srcs ...map[string]string) map[string]string {
	if dst == nil {
		dst = map[string]string{}
	}
	for _, src := range srcs {
		maps.Copy(dst, src)
	}
	return dst
}
