package gpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"
)

// cu's Launch copies 8 bytes from each parameter pointer; the driver reads
// the kernel parameter's own size from the start of the slot. So each slot
// must hold its value in its low bytes, little-endian.
func TestArgsFillTheirOwnSlot(t *testing.T) {
	tests := []struct {
		name string
		arg  Arg
		low4 uint32 // what a 4-byte parameter reads
		all8 uint64 // what an 8-byte parameter reads
	}{
		{"Int32(77)", Int32(77), 77, 77},
		{"Int32(-1)", Int32(-1), 0xffffffff, 0x00000000ffffffff},
		{"Float32(0.125)", Float32(0.125), math.Float32bits(0.125), uint64(math.Float32bits(0.125))},
		{"Uint64(1<<40+3)", Uint64(1<<40 + 3), 3, 1<<40 + 3},
		{"Pointer(0xdeadbeef000)", Pointer(0xdeadbeef000), 0xdbeef000, 0xdeadbeef000},
	}
	args := make([]Arg, len(tests))
	for i, tc := range tests {
		args[i] = tc.arg
	}
	slots, pointers := paramPointers(args)
	for i, tc := range tests {
		slot := unsafe.Slice((*byte)(pointers[i]), 8)
		if got := binary.LittleEndian.Uint32(slot); got != tc.low4 {
			t.Errorf("%s: 4-byte read %#x, want %#x", tc.name, got, tc.low4)
		}
		if got := binary.LittleEndian.Uint64(slot); got != tc.all8 {
			t.Errorf("%s: 8-byte read %#x, want %#x", tc.name, got, tc.all8)
		}
		if uintptr(pointers[i]) != uintptr(unsafe.Pointer(&slots[i])) {
			t.Errorf("%s: pointer %d does not point at its own slot", tc.name, i)
		}
	}
}

func TestDevicePeaks(t *testing.T) {
	tests := []struct {
		name           string
		info           DeviceInfo
		tflops, gbps   float64
		cc, driverCUDA string
	}{
		{"H100 SXM at the datasheet clock",
			DeviceInfo{Major: 9, Minor: 0, Multiprocessors: 132, SMClockMHz: 1830, MemClockMHz: 2619, MemBusWidthBits: 5120, DriverVersion: 13000},
			989.5, 3352, "9.0", "13.0"},
		{"L4", DeviceInfo{Major: 8, Minor: 9, Multiprocessors: 58, SMClockMHz: 2040, MemClockMHz: 6251, MemBusWidthBits: 192, DriverVersion: 12040},
			121.2, 300, "8.9", "12.4"},
		{"A100", DeviceInfo{Major: 8, Minor: 0, Multiprocessors: 108, SMClockMHz: 1410, MemClockMHz: 1215, MemBusWidthBits: 5120, DriverVersion: 11080},
			311.9, 1555, "8.0", "11.8"},
		{"unknown architecture", DeviceInfo{Major: 7, Minor: 5, Multiprocessors: 40, SMClockMHz: 1590}, 0, 0, "7.5", "0.0"},
	}
	for _, tc := range tests {
		if got := tc.info.PeakTFLOPS(); math.Abs(got-tc.tflops) > 0.5 {
			t.Errorf("%s: PeakTFLOPS = %.1f, want %.1f", tc.name, got, tc.tflops)
		}
		if got := tc.info.PeakGBps(); math.Abs(got-tc.gbps) > 1 {
			t.Errorf("%s: PeakGBps = %.1f, want %.1f", tc.name, got, tc.gbps)
		}
		if got := tc.info.ComputeCapability(); got != tc.cc {
			t.Errorf("%s: ComputeCapability = %s, want %s", tc.name, got, tc.cc)
		}
		if got := tc.info.DriverCUDAVersion(); got != tc.driverCUDA {
			t.Errorf("%s: DriverCUDAVersion = %s, want %s", tc.name, got, tc.driverCUDA)
		}
	}
}

func TestCUDAErrorText(t *testing.T) {
	err := fmt.Errorf("fetch c1: %w", &CUDAError{Op: "synchronize", Code: ResultIllegalAddress, Name: "CUDA_ERROR_ILLEGAL_ADDRESS"})
	if got := err.Error(); got != "fetch c1: synchronize: CUDA_ERROR_ILLEGAL_ADDRESS" {
		t.Errorf("text %q", got)
	}
	if !IsContextLost(err) || IsOutOfMemory(err) {
		t.Error("an illegal address must lose the context and is not out of memory")
	}
	oom := &CUDAError{Op: "allocate 8 bytes", Code: ResultOutOfMemory, Name: "CUDA_ERROR_OUT_OF_MEMORY"}
	if !IsOutOfMemory(oom) || IsContextLost(oom) {
		t.Error("out of memory must be recognised and must not lose the context")
	}
	if got := (&CUDAError{Op: "x", Code: 999}).Error(); got != "x: CUresult 999" {
		t.Errorf("unnamed code text %q", got)
	}
	if IsOutOfMemory(errors.New("out of memory")) {
		t.Error("a plain error is not a CUDA out-of-memory error")
	}
}

func TestNoCUDAErrorNamesTheCause(t *testing.T) {
	if !strings.Contains(ErrNoCUDA.Error(), "built without CUDA") {
		t.Errorf("ErrNoCUDA = %q", ErrNoCUDA)
	}
}
