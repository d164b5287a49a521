package cpureference

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/flashcore/bench/sdk"
)

func TestEncodeRoundsToNearestEven(t *testing.T) {
	tests := []struct {
		name  string
		dtype sdk.DType
		value float32
		want  uint32 // the element's bits
	}{
		{"fp16 one", sdk.FP16, 1, 0x3C00},
		{"fp16 tie rounds down to even", sdk.FP16, 1 + 1.0/2048, 0x3C00},
		{"fp16 tie rounds up to even", sdk.FP16, 1 + 3.0/2048, 0x3C02},
		{"fp16 overflow", sdk.FP16, 70000, 0x7C00},
		{"fp16 negative", sdk.FP16, -2, 0xC000},
		{"bf16 one", sdk.BF16, 1, 0x3F80},
		{"bf16 tie rounds down to even", sdk.BF16, 1 + 1.0/256, 0x3F80},
		{"bf16 tie rounds up to even", sdk.BF16, 1 + 3.0/256, 0x3F82},
		{"bf16 above the tie", sdk.BF16, math.Float32frombits(0x3F808001), 0x3F81},
		{"bf16 negative", sdk.BF16, -2, 0xC000},
		{"fp32 exact", sdk.FP32, 0.1, math.Float32bits(0.1)},
		{"fp16 poison stays poison", sdk.FP16, poisoned, 0xFFFF},
		{"bf16 poison stays poison", sdk.BF16, poisoned, 0xFFFF},
		{"fp32 poison stays poison", sdk.FP32, poisoned, 0xFFFFFFFF},
	}
	for _, tc := range tests {
		out := make([]byte, tc.dtype.Size())
		encode(tc.dtype, []float32{tc.value}, out)
		var got uint32
		if tc.dtype.Size() == 2 {
			got = uint32(binary.LittleEndian.Uint16(out))
		} else {
			got = binary.LittleEndian.Uint32(out)
		}
		if got != tc.want {
			t.Errorf("%s: encode(%g) = %#x, want %#x", tc.name, tc.value, got, tc.want)
		}
	}
}

// fp16 and bf16 values survive decode then encode unchanged.
func TestDecodeEncodeRoundTrip(t *testing.T) {
	for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16} {
		raw := make([]byte, 2*0x10000)
		for bits := range 0x10000 {
			binary.LittleEndian.PutUint16(raw[2*bits:], uint16(bits))
		}
		values, err := decode(dtype, raw)
		if err != nil {
			t.Fatal(err)
		}
		again := make([]byte, len(raw))
		encode(dtype, values, again)
		for bits := range 0x10000 {
			if values[bits] != values[bits] {
				continue // NaN payloads need not survive
			}
			if got := binary.LittleEndian.Uint16(again[2*bits:]); got != uint16(bits) {
				t.Errorf("%s %#04x: decoded to %g, encoded back to %#04x", dtype, bits, values[bits], got)
			}
		}
	}
}

func TestDecodeRejectsPartialElements(t *testing.T) {
	if _, err := decode(sdk.FP32, make([]byte, 6)); err == nil {
		t.Error("decode of 6 bytes as fp32 returned no error")
	}
	if _, err := decode("fp8", make([]byte, 4)); err == nil {
		t.Error("decode of an unknown dtype returned no error")
	}
}
