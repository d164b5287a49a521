package ncu

import "testing"

func TestReachForEveryTimingMethod(t *testing.T) {
	for _, tc := range []struct {
		method string
		want   Reach
		ok     bool
	}{
		{MethodSpin, Reach{Process: PluginProcess, KernelRegex: AttentionKernels, NVTX: true}, true},
		{MethodCUPTISpin, Reach{Process: PluginProcess, KernelRegex: AttentionKernels, NVTX: true}, true},
		{MethodCUPTI, Reach{Process: WorkerProcess, NVTX: true}, true},
		{MethodSleep, Reach{Process: WorkerProcess, NVTX: true}, true},
		{"wall-clock", Reach{}, false},
	} {
		got, ok := ReachFor(tc.method)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ReachFor(%q) = %+v, %v; want %+v, %v", tc.method, got, ok, tc.want, tc.ok)
		}
	}
}
