package inputs

import (
	"math"
	"testing"

	"github.com/flashcore/bench/sdk"
	"github.com/x448/float16"
)

func TestRound(t *testing.T) {
	tests := []struct {
		dtype sdk.DType
		in    float64
		want  float64
	}{
		{sdk.FP16, 1, 1},
		{sdk.FP16, 1 + 0x1p-11, 1},                     // tie: to even (down)
		{sdk.FP16, 1 + 3*0x1p-11, 1 + 0x1p-9},          // tie: to even (up)
		{sdk.FP16, 1 + 0x1p-11 + 0x1p-20, 1 + 0x1p-10}, // above the tie
		{sdk.FP16, 65504, 65504},
		{sdk.FP16, 65520, math.Inf(1)}, // rounds past the largest finite
		{sdk.FP16, 0x1p-24, 0x1p-24},   // smallest subnormal
		{sdk.FP16, -2.5, -2.5},
		{sdk.BF16, 1 + 0x1p-8, 1},            // tie: to even (down)
		{sdk.BF16, 1 + 3*0x1p-8, 1 + 0x1p-6}, // tie: to even (up)
		{sdk.BF16, 1 + 0x1p-8 + 0x1p-20, 1 + 0x1p-7},
		{sdk.BF16, 3.4e38, math.Inf(1)}, // rounds past the largest finite
		{sdk.BF16, -0.1, -0.10009765625},
		{sdk.FP32, 0.1, float64(float32(0.1))},
		{sdk.FP32, 1 + 0x1p-30, 1},
	}
	for _, tc := range tests {
		if got := Round(tc.dtype, tc.in); got != tc.want {
			t.Errorf("Round(%s, %v) = %v, want %v", tc.dtype, tc.in, got, tc.want)
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	values := []float64{0, 1, -1, 0.5, 3.140625, -1024, 0x1p-14}
	for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32} {
		data := Encode(dtype, values)
		if len(data) != len(values)*dtype.Size() {
			t.Fatalf("%s: %d bytes", dtype, len(data))
		}
		got := Decode(dtype, data)
		for i, v := range values {
			if got[i] != v || At(dtype, data, i) != v {
				t.Errorf("%s: element %d decodes to %v / %v, want %v", dtype, i, got[i], At(dtype, data, i), v)
			}
		}
	}
	// Little-endian fp16 1.0 is 00 3c; bf16 1.0 is 80 3f.
	if b := Encode(sdk.FP16, []float64{1}); b[0] != 0x00 || b[1] != 0x3c {
		t.Errorf("fp16 1.0 = % x", b)
	}
	if b := Encode(sdk.BF16, []float64{1}); b[0] != 0x80 || b[1] != 0x3f {
		t.Errorf("bf16 1.0 = % x", b)
	}
}

func TestPoisonDecodesAsNaN(t *testing.T) {
	for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32} {
		poison := make([]byte, dtype.Size())
		for i := range poison {
			poison[i] = sdk.PoisonByte
		}
		if v := At(dtype, poison, 0); !math.IsNaN(v) {
			t.Errorf("%s poison decodes to %v", dtype, v)
		}
	}
}

// TestFP16MatchesReference compares the short path with x448/float16 on
// every float32 whose top 16 bits are in the normal range, at several
// low-bit patterns that cover ties and carries.
func TestFP16MatchesReference(t *testing.T) {
	lows := []uint32{0, 1, 0x0FFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x3000, 0xFFFF}
	for high := uint32(0); high < 1<<16; high++ {
		for _, low := range lows {
			f := math.Float32frombits(high<<16 | low)
			if got, want := fp16FromFloat32(f), float16.Fromfloat32(f).Bits(); got != want && f == f {
				t.Fatalf("fp16(%g = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
			}
		}
	}
}
