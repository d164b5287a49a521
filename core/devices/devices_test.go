package devices

import (
	"os"
	"slices"
	"testing"

	"github.com/flashcore/bench/core/results"
)

func TestParse(t *testing.T) {
	out, err := os.ReadFile("testdata/h200x2.csv")
	if err != nil {
		t.Fatal(err)
	}
	gpus, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	want := results.RowDevice{Index: 1, Name: "NVIDIA H200", UUID: "GPU-8a7b6c5d-aaaa-bbbb-cccc-111111111111", SMClockMHz: 1980, MemClockMHz: 3201}
	if len(gpus) != 2 || gpus[1] != want {
		t.Fatalf("parsed %+v, want 2 GPUs, the second %+v", gpus, want)
	}
	if _, err := Parse([]byte("x, a, b, 1, 2\n")); err == nil {
		t.Error("a non-numeric index parsed")
	}
	if g, err := Parse([]byte("0, A, GPU-1, [N/A], [N/A]\n")); err != nil || g[0].SMClockMHz != 0 {
		t.Errorf("[N/A] clocks: %+v, %v", g, err)
	}
}

func TestChoose(t *testing.T) {
	gpus := []results.RowDevice{{Index: 0, UUID: "GPU-a"}, {Index: 1, UUID: "GPU-b"}}
	for _, tc := range []struct {
		spec, want, err string
	}{
		{spec: "all", want: "GPU-a GPU-b"},
		{spec: "1", want: "GPU-b"},
		{spec: "1,0", want: "GPU-b GPU-a"},
		{spec: "2", err: `--devices "2": this machine has no GPU 2 (it has: 0, 1)`},
		{spec: "0,0", err: `--devices "0,0" names GPU 0 twice`},
		{spec: "x", err: `--devices "x": want all or GPU indexes such as 0,1`},
	} {
		got, err := Choose(gpus, tc.spec)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("Choose(%q) error %v, want %q", tc.spec, err, tc.err)
			}
			continue
		}
		var uuids string
		for i, g := range got {
			if i > 0 {
				uuids += " "
			}
			uuids += g.UUID
		}
		if err != nil || uuids != tc.want {
			t.Errorf("Choose(%q) = %q, %v; want %q", tc.spec, uuids, err, tc.want)
		}
	}
}

func TestParseUUIDs(t *testing.T) {
	out := []byte(`GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-8a7b6c5d-aaaa-bbbb-cccc-111111111111)
GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-1b2c3d4e-aaaa-bbbb-cccc-333333333333)
  MIG 1g.5gb      Device  0: (UUID: MIG-0f1e2d3c-dddd-eeee-ffff-222222222222)
No devices were found
`)
	want := []string{"GPU-8a7b6c5d-aaaa-bbbb-cccc-111111111111", "GPU-1b2c3d4e-aaaa-bbbb-cccc-333333333333", "MIG-0f1e2d3c-dddd-eeee-ffff-222222222222"}
	if got := ParseUUIDs(out); !slices.Equal(got, want) {
		t.Errorf("ParseUUIDs = %q, want %q", got, want)
	}
}

func TestSameUUID(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"GPU-8a7b6c5d-aaaa", "GPU-8a7b6c5d-aaaa", true},
		{"GPU-8a7b6c5d-aaaa", "8A7B6C5D-AAAA", true},
		{"GPU-8a7b6c5d-aaaa", "GPU-8a7b6c5d-aaab", false},
		{"MIG-8a7b6c5d-aaaa", "GPU-8a7b6c5d-aaaa", true},
		{"MIG-8a7b6c5d-aaaa", "MIG-8a7b6c5d-aaab", false},
		{"", "", false},
	}
	for _, tt := range tests {
		if got := SameUUID(tt.a, tt.b); got != tt.want {
			t.Errorf("SameUUID(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
