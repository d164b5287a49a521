package gpu

import "testing"

func TestCheckTensorMap(t *testing.T) {
	tests := []struct {
		name      string
		buffer    int64
		elemBytes int
		dims      []uint64
		box       []uint32
		want      string
	}{
		{"K of B2 KVH4 S77 D128 fp16", 2 * 4 * 77 * 128 * 2, 2, []uint64{128, 77, 8}, []uint32{64, 128, 1}, ""},
		{"over the buffer", 100, 2, []uint64{128, 77, 8}, []uint32{64, 128, 1}, "tensor map: 157696 bytes of tensor over a buffer of 100"},
		{"rank 6", 1 << 20, 2, []uint64{1, 1, 1, 1, 1, 1}, []uint32{1, 1, 1, 1, 1, 1}, "tensor map: rank 6, want 1 to 5"},
		{"a box of 257", 1 << 20, 2, []uint64{64, 512}, []uint32{64, 257}, "tensor map: box 1 is 257, want 1 to 256"},
		{"an empty dim", 1 << 20, 2, []uint64{64, 0}, []uint32{64, 1}, "tensor map: dim 1 is 0, want 1 to 2^32"},
		{"fp32 inner box of 64", 1 << 20, 4, []uint64{64, 8}, []uint32{64, 8}, "tensor map: an innermost box of 256 bytes; the 128-byte swizzle takes at most 128"},
		{"bytes of 1", 1 << 20, 1, []uint64{64}, []uint32{64}, "tensor map: elements of 1 bytes, want 2 or 4"},
	}
	for _, tc := range tests {
		err := CheckTensorMap(tc.buffer, tc.elemBytes, tc.dims, tc.box)
		if got := ""; err != nil {
			got = err.Error()
			if got != tc.want {
				t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("%s: accepted, want %q", tc.name, tc.want)
		}
	}
}
