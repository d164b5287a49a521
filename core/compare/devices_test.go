package compare

import (
	"testing"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/sdk"
)

// TestRowsOnOtherGPUModelsAreNotCompared: two passing, timed rows that
// name different GPU models are not judged on time; on two GPUs of one
// model they are.
func TestRowsOnOtherGPUModelsAreNotCompared(t *testing.T) {
	timed := func(model, uuid string, ns float64) Measure {
		r := &results.Result{Status: results.StatusPass, Device: &results.RowDevice{Name: model, UUID: uuid},
			Timings: []results.Timing{{L2: sdk.L2Hot, Kernel: results.Stats{N: 20, MedianNs: ns, RelNoise: 0.001}}}}
		return Measure{Result: r, KernelNs: ns, RelNoise: 0.001, N: 20}
	}
	other := judge(timed("NVIDIA H200", "GPU-a", 100), timed("NVIDIA H100 80GB HBM3", "GPU-b", 100), DefaultThreshold)
	if other.Verdict != NotCompared || other.Detail != "ran on NVIDIA H200 in old, NVIDIA H100 80GB HBM3 in new" {
		t.Errorf("across models: %+v", other)
	}
	same := judge(timed("NVIDIA H200", "GPU-a", 100), timed("NVIDIA H200", "GPU-b", 100), DefaultThreshold)
	if same.Verdict != Same {
		t.Errorf("two GPUs of one model, equal times: %+v", same)
	}
}
