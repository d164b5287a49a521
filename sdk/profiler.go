package sdk

import (
	"fmt"
	"sort"
	"strings"
)

// Marking calls for a profiler. flashcore verify-timing and profile start
// a backend under Nsight Compute with UnderProfilerEnv set to 1. A backend
// that sees it runs every call of a Run inside two nested NVTX ranges:
// ProfilerOuterRange, which the profiler's filter selects, and the call's
// own CallRange, which names the row and the call, so that one profiler
// session can hold many rows and still tell their calls apart. The Go CUDA
// plugins (cudakit) and the Python bridges (flashcore_worker.py,
// call_range) do this.
const (
	UnderProfilerEnv   = "FLASHCORE_UNDER_PROFILER"
	ProfilerOuterRange = "flashcore"
)

// PluginWrapperEnv names a command prefix the host starts every plugin
// under (a sanitizer, a profiler; core/host). A plugin started under one
// finds it in its own environment too, and leaves CUPTI to the tool.
const PluginWrapperEnv = "FLASHCORE_PLUGIN_WRAPPER"

// CallRange is the NVTX range of call n (counting from 1) of the row that
// case caseID and label name: "flashcore call <case> <label> #<n>".
func CallRange(caseID, label string, n int) string {
	return fmt.Sprintf("flashcore call %s %s #%d", caseID, label, n)
}

// RowLabel is a row's label in results and tables: the variant, then
// "[k=v,...]" (TunablesKey) when the row sets tunables.
func RowLabel(variant string, tunables map[string]string) string {
	if len(tunables) == 0 {
		return variant
	}
	return variant + "[" + TunablesKey(tunables) + "]"
}

// TunablesKey is a choice of tunables as "k=v,..." with the keys sorted:
// "kv_stages=2,tile_n=64".
func TunablesKey(tunables map[string]string) string {
	keys := make([]string, 0, len(tunables))
	for k := range tunables {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + tunables[k]
	}
	return strings.Join(parts, ",")
}

// The timing reference. flashcore verify-timing starts a backend with
// TimingReferenceEnv set to TimingReferenceCUPTI. A backend that sees it
// times the calls its kernel samples came from a second way, by CUPTI's
// activity records with each call's kernels and memsets told apart by
// correlation (not by the device's order, nor by events around them), and
// reports them as the timing facts below: verify-timing's reference for
// the row's figure. The Go CUDA plugins (cudakit) and the
// Python bridges (flashcore_cupti.py) do this.
const (
	TimingReferenceEnv   = "FLASHCORE_TIMING_REFERENCE"
	TimingReferenceCUPTI = "cupti"

	// FactReferenceNs is the reference figures, space-separated
	// nanoseconds: each the device time of one call, or of one sample's
	// calls averaged, as FactReferenceMethod says.
	FactReferenceNs = "reference_ns"
	// FactReferenceKernels lists the activities of one call: "name (µs); ...".
	FactReferenceKernels = "reference_kernels"
	// FactReferenceMethod says how the reference was taken.
	FactReferenceMethod = "reference_method"
	// FactReferenceError is why there is no reference.
	FactReferenceError = "reference_error"
	// FactCUPTIFallback says why a Run's kernel times are not CUPTI's.
	// Where CUPTI's records missed device time the CUDA events saw, the Run
	// reports the events' figures of the same samples and keeps CUPTI's,
	// which its stopping rule judged, as the cross-check; the host then
	// replays the rule on either (core/runner.StopRuleViolation).
	FactCUPTIFallback = "cupti_fallback"
)
