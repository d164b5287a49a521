package results

import "testing"

// TestRowNamer: a row is named by its label, variant or backend; a label
// two backends share is prefixed with the backend, across all the runs
// named, and only then.
func TestRowNamer(t *testing.T) {
	old := &Run{Results: []Result{
		{Backend: "pytorch-sdpa", Variant: "sdpa", Label: "sdpa"},
		{Backend: "cuda-v8", Variant: "default", Label: "cuda-v8[tile_n=32]"},
		{Backend: "cpu-reference"},
		{Backend: "triton", Variant: "fa"},
	}}
	later := &Run{Results: []Result{{Backend: "my-fa", Label: "sdpa"}}}
	tests := []struct {
		runs []*Run
		r    Result
		want string
	}{
		{[]*Run{old}, old.Results[0], "sdpa"},
		{[]*Run{old}, old.Results[1], "cuda-v8[tile_n=32]"},
		{[]*Run{old}, old.Results[2], "cpu-reference"},
		{[]*Run{old}, old.Results[3], "fa"},
		{[]*Run{old, later}, old.Results[0], "pytorch-sdpa/sdpa"},
		{[]*Run{old, later}, later.Results[0], "my-fa/sdpa"},
	}
	for _, tt := range tests {
		if got := NewRowNamer(tt.runs...).Name(&tt.r); got != tt.want {
			t.Errorf("%d runs, %s/%s: %q, want %q", len(tt.runs), tt.r.Backend, tt.r.RowLabel(), got, tt.want)
		}
	}
}
