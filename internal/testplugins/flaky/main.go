// Command flaky is a test-only plugin whose output changes from call to
// call on the same inputs, for the determinism and stability gates: the
// second output it writes has its first element one ULP off, the third a
// NaN in its second element, and every other output is the echo plugin's
// (a copy of Q). Its input hash is real.
package main

import (
	"sync/atomic"

	"github.com/flashcore/bench/internal/testplugins/testbackend"
	"github.com/flashcore/bench/sdk"
)

func main() {
	var calls atomic.Int64
	sdk.Serve(func() sdk.Backend {
		return testbackend.New(testbackend.Options{
			Name:        "test-flaky",
			Description: "test only: its 2nd output is 1 ULP off in one element, its 3rd holds a NaN",
			FillOutput: func(output []byte, shape sdk.Shape, q []byte) {
				testbackend.CopyQ(output, shape, q)
				switch calls.Add(1) {
				case 2:
					output[0]++ // the lowest mantissa bit of element 0, little-endian
				case 3:
					size := shape.DType.Size()
					copy(output[size:2*size], nanBits(shape.DType))
				}
			},
		})
	})
}

// nanBits is a quiet NaN of the dtype, little-endian.
func nanBits(dtype sdk.DType) []byte {
	switch dtype.Size() {
	case 2:
		if dtype == sdk.BF16 {
			return []byte{0xc0, 0x7f}
		}
		return []byte{0x00, 0x7e}
	}
	return []byte{0x00, 0x00, 0xc0, 0x7f}
}
