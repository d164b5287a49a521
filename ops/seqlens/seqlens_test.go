package seqlens

import (
	"slices"
	"testing"
)

func TestDraw(t *testing.T) {
	for _, dist := range Dists {
		got := Draw("k", 50, 3, 900, dist)
		if slices.Max(got) != 900 || slices.Min(got) < 3 || len(got) != 50 {
			t.Errorf("%s: %d lengths in [%d, %d], want 50 in [3, 900] reaching 900", dist, len(got), slices.Min(got), slices.Max(got))
		}
		if !slices.Equal(got, Draw("k", 50, 3, 900, dist)) {
			t.Errorf("%s: two draws differ", dist)
		}
		if dist != Equal && slices.Equal(got, Draw("other", 50, 3, 900, dist)) {
			t.Errorf("%s: another key drew the same lengths", dist)
		}
	}
	if got := Draw("k", 4, 1, 10, Equal); !slices.Equal(got, []int{10, 10, 10, 10}) {
		t.Errorf("equal: %v", got)
	}
}
