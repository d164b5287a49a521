package runner

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/sdk"
)

// TestTimingRecordKeepsEverySample: the results file keeps the raw
// samples, in the order taken, beside the stats that summarise them.
func TestTimingRecordKeepsEverySample(t *testing.T) {
	us := func(values ...int) []time.Duration {
		var out []time.Duration
		for _, v := range values {
			out = append(out, time.Duration(v)*time.Microsecond+7)
		}
		return out
	}
	tests := []struct {
		name    string
		samples sdk.Samples
		want    results.Samples
	}{
		{"every kind", sdk.Samples{KernelTimes: us(9, 8, 10), CallTimes: us(40, 41), CrossCheckTimes: us(7, 7, 8)},
			results.Samples{KernelNs: []int64{9007, 8007, 10007}, CallNs: []int64{40007, 41007}, CrossCheckNs: []int64{7007, 7007, 8007}}},
		{"no cross-check", sdk.Samples{KernelTimes: us(9, 8), CallTimes: us(40)},
			results.Samples{KernelNs: []int64{9007, 8007}, CallNs: []int64{40007}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := timingRecord(sdk.L2Hot, tt.samples)
			if got.Samples == nil || !reflect.DeepEqual(*got.Samples, tt.want) {
				t.Fatalf("samples %+v, want %+v", got.Samples, tt.want)
			}
			if got.Kernel.N != len(tt.want.KernelNs) || got.Call.N != len(tt.want.CallNs) {
				t.Errorf("stats n %d and %d disagree with the samples kept", got.Kernel.N, got.Call.N)
			}
		})
	}
}

// TestKernelNoiseSpansPlacements: samples tight within each placement but
// placements apart get the placements' spread as their noise, not the
// samples' own.
func TestKernelNoiseSpansPlacements(t *testing.T) {
	block := func(us float64, n int) []time.Duration {
		var out []time.Duration
		for i := range n {
			out = append(out, time.Duration((us+0.001*us*float64(i%3))*1000))
		}
		return out
	}
	var samples []time.Duration
	for _, level := range []float64{1000, 1100, 1000, 1050, 1000} {
		samples = append(samples, block(level, 10)...)
	}
	tests := []struct {
		name      string
		blocks    []int
		low, high float64
	}{
		{"no blocks: the samples' own noise", nil, 0.02, 0.03},
		{"five placements: half their range", []int{10, 10, 10, 10, 10}, 0.0499, 0.0501},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := timingRecord(sdk.L2Hot, sdk.Samples{KernelTimes: samples, KernelBlocks: tt.blocks}).Kernel.RelNoise
			if got < tt.low || got > tt.high {
				t.Errorf("rel_noise %.4f, want %.4f to %.4f", got, tt.low, tt.high)
			}
		})
	}
}

// TestPluginFactsCannotForgeTheHosts: a plugin's facts under the host's
// own keys (its clock's and the audit's) are dropped with a warning, so
// that no plugin can write a verdict the host reads back; its other facts
// stay.
func TestPluginFactsCannotForgeTheHosts(t *testing.T) {
	tests := []struct {
		name        string
		facts       map[string]string
		wantKept    []string
		wantDropped string
	}{
		{"ordinary facts", map[string]string{"registers": "128", "kernel": "fwd"}, []string{"registers", "kernel"}, ""},
		{"the host's clock verdict", map[string]string{results.HostClockFact: results.HostClockReconciled, "kernel": "fwd"}, []string{"kernel"}, results.HostClockFact},
		{"the audit's", map[string]string{"audit_verdict": "agrees", "host_batch_wall_ns": "1"}, nil, "audit_verdict, host_batch_wall_ns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &results.Result{}
			kept := pluginFacts(res, tt.facts)
			if len(kept) != len(tt.wantKept) {
				t.Errorf("kept %v, want %v", kept, tt.wantKept)
			}
			for _, k := range tt.wantKept {
				if _, ok := kept[k]; !ok {
					t.Errorf("%s dropped", k)
				}
			}
			switch {
			case tt.wantDropped == "" && len(res.Diagnostics) != 0:
				t.Errorf("diagnostics %+v, want none", res.Diagnostics)
			case tt.wantDropped != "" && (len(res.Diagnostics) != 1 || !strings.HasSuffix(res.Diagnostics[0].Summary, tt.wantDropped)):
				t.Errorf("diagnostics %+v, want one naming %s", res.Diagnostics, tt.wantDropped)
			}
			if _, forged := tt.facts[results.HostClockFact]; forged {
				addFacts(res, kept)
				if res.Status = results.StatusPass; res.HostBound() {
					t.Errorf("a forged fact made the row host-bound")
				}
			}
		})
	}
}
