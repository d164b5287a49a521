package cudakit

import (
	"testing"

	"github.com/flashcore/bench/cudakit/gpu"
)

func TestAttribution(t *testing.T) {
	const helper = helperMark | 7
	call := func(mark, start, end uint64, name string) gpu.Activity {
		return gpu.Activity{Name: name, StartNs: start, EndNs: end, Mark: mark, Marked: true}
	}
	helperAct := func(start, end uint64) gpu.Activity { return call(helper, start, end, "flashcore_spin") }
	unmarked := func(start, end uint64) gpu.Activity { return gpu.Activity{Name: "stray", StartNs: start, EndNs: end} }
	marks := sampleMarks{helper: helper, helpers: 2, first: 10, calls: 2, perCall: 2}
	tests := []struct {
		name           string
		acts           []gpu.Activity
		complete       bool
		window, byMark uint64
		helpersSeen    int
		wantShort      int
	}{
		{
			name: "a cold sample: spin, flush, two calls of a memset and a kernel, and an earlier sample's stray",
			acts: []gpu.Activity{
				call(5, 100, 130, "attn"), // an earlier sample, arriving late
				helperAct(1000, 1100), helperAct(1100, 1200),
				call(10, 1200, 1201, "memset"), call(10, 1201, 1231, "attn"),
				call(11, 1232, 1233, "memset"), call(11, 1233, 1263, "attn"),
			},
			complete: true, window: 62, byMark: 62, helpersSeen: 2,
		},
		{
			name: "work no call launched, after the spin, counts in the figure only",
			acts: []gpu.Activity{
				helperAct(1000, 1100), helperAct(1100, 1200),
				call(10, 1200, 1201, "memset"), call(10, 1201, 1231, "attn"),
				unmarked(1231, 1300),
				call(11, 1300, 1301, "memset"), call(11, 1301, 1331, "attn"),
			},
			complete: true, window: 131, byMark: 62, helpersSeen: 2,
		},
		{
			name: "another sample's helpers never open this sample's window",
			acts: []gpu.Activity{
				call(helperMark|6, 500, 600, "flashcore_spin"),
				call(10, 550, 551, "memset"),
			},
			complete: false, window: 0, byMark: 1, wantShort: 2,
		},
		{
			name: "a call's kernel not yet recorded",
			acts: []gpu.Activity{
				helperAct(1000, 1100), helperAct(1100, 1200),
				call(10, 1200, 1201, "memset"), call(10, 1201, 1231, "attn"),
				call(11, 1232, 1233, "memset"),
			},
			complete: false, window: 32, byMark: 32, helpersSeen: 2, wantShort: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := marks.attribute(tt.acts)
			if got.complete() != tt.complete || got.windowNs != tt.window || got.byMarkNs != tt.byMark ||
				got.helpersSeen != tt.helpersSeen || got.short() != tt.wantShort {
				t.Errorf("complete %v window %d byMark %d helpers %d short %d; want %v %d %d %d %d (missing: %s)",
					got.complete(), got.windowNs, got.byMarkNs, got.helpersSeen, got.short(),
					tt.complete, tt.window, tt.byMark, tt.helpersSeen, tt.wantShort, got.missing())
			}
		})
	}
}
