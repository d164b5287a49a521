//go:build cuda

package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/flashcore/bench/cudakit/gpu/gputest" // skip the binary without a GPU
)

// probePTX holds test kernels: echo_params writes its parameters, of mixed
// sizes, to out; write_null stores to address 0.
const probePTX = `
.version 7.0
.target sm_80
.address_size 64

.visible .entry echo_params(.param .u64 out, .param .u32 a, .param .f32 b, .param .u64 c)
{
	.reg .u64 %rd<4>;
	.reg .u32 %r<2>;
	.reg .f32 %f<2>;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	ld.param.u32 %r1, [a];
	ld.param.f32 %f1, [b];
	ld.param.u64 %rd2, [c];
	st.global.u32 [%rd1], %r1;
	st.global.f32 [%rd1+4], %f1;
	st.global.u64 [%rd1+8], %rd2;
	ret;
}

.visible .entry write_null()
{
	.reg .u64 %rd<2>;
	.reg .u32 %r<2>;
	mov.u64 %rd1, 0;
	mov.u32 %r1, 1;
	st.global.u32 [%rd1], %r1;
	ret;
}
`

func newWorker(t *testing.T) *Worker {
	t.Helper()
	w, err := NewWorker(0)
	if err != nil {
		t.Fatalf("NewWorker: %v", err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil && !t.Failed() && !strings.Contains(t.Name(), "Fault") {
			t.Errorf("Close: %v", err)
		}
	})
	return w
}

func TestQueryDeviceOnGPU(t *testing.T) {
	d, err := QueryDevice(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v; peak %.0f TFLOP/s, %.0f GB/s", d, d.PeakTFLOPS(), d.PeakGBps())
	if d.Name == "" || d.Multiprocessors <= 0 || d.L2Bytes <= 0 || d.MemoryBytes <= 0 || d.SMClockMHz <= 0 ||
		d.MemClockMHz <= 0 || d.MemBusWidthBits <= 0 || d.DriverVersion <= 0 || d.MaxSharedPerBlockOptin < 48*1024 {
		t.Errorf("implausible device info %+v", d)
	}
}

// Every Do runs on the same OS thread: the context stays current.
func TestWorkerStaysOnOneThread(t *testing.T) {
	w := newWorker(t)
	var first int
	for i := range 20 {
		if err := w.Do(func() error {
			tid := syscall.Gettid()
			if i == 0 {
				first = tid
			} else if tid != first {
				t.Errorf("Do %d ran on thread %d, the first on %d", i, tid, first)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// withEchoParams runs use on w's thread with the probe's echo_params
// kernel loaded and a 16-byte buffer for it to write.
func withEchoParams(w *Worker, use func(fn *Function, out *Buffer) error) error {
	return w.Do(func() error {
		mod, err := LoadModule([]byte(probePTX))
		if err != nil {
			return err
		}
		defer mod.Unload()
		fn, err := mod.Function("echo_params")
		if err != nil {
			return err
		}
		out, err := Alloc(16)
		if err != nil {
			return err
		}
		defer out.Free()
		return use(fn, out)
	})
}

func TestParamsReachTheKernelIntact(t *testing.T) {
	w := newWorker(t)
	err := withEchoParams(w, func(fn *Function, out *Buffer) error {
		if err := fn.Launch(Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, out.Arg(), Int32(-77), Float32(0.375), Uint64(1<<40+9)); err != nil {
			return err
		}
		if err := Synchronize(); err != nil {
			return err
		}
		got := make([]byte, 16)
		if err := out.Download(got); err != nil {
			return err
		}
		if a := int32(binary.LittleEndian.Uint32(got)); a != -77 {
			t.Errorf("int parameter arrived as %d", a)
		}
		if b := math.Float32frombits(binary.LittleEndian.Uint32(got[4:])); b != 0.375 {
			t.Errorf("float parameter arrived as %v", b)
		}
		if c := binary.LittleEndian.Uint64(got[8:]); c != 1<<40+9 {
			t.Errorf("u64 parameter arrived as %d", c)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestTimerSpinsAndReadsTheClock(t *testing.T) {
	w := newWorker(t)
	err := w.Do(func() error {
		timer, err := NewTimer(w.Device(), 8)
		if err != nil {
			return err
		}
		defer timer.Close()
		start, _ := NewEvent()
		stop, _ := NewEvent()
		defer start.Destroy()
		defer stop.Destroy()
		const spin = 200 * time.Microsecond
		for range 3 {
			start.Record()
			if err := timer.Spin(spin); err != nil {
				return err
			}
			stop.Record()
			if err := stop.Synchronize(); err != nil {
				return err
			}
			d, err := Elapsed(start, stop)
			if err != nil {
				return err
			}
			if d < spin || d > 20*spin {
				t.Errorf("a %v spin took %v between events", spin, d)
			}
		}
		clocks, err := timer.Clocks(10)
		if err != nil {
			return err
		}
		t.Logf("SM clocks seen by the spin kernel: %v MHz (max %.0f)", clocks, w.Device().SMClockMHz)
		if len(clocks) != 3 {
			t.Errorf("%d clock readings, want 3", len(clocks))
		}
		for _, c := range clocks {
			if c < 100 || c > 1.2*w.Device().SMClockMHz+100 {
				t.Errorf("implausible SM clock %.0f MHz", c)
			}
		}
		start.Record()
		if err := timer.FlushL2(); err != nil {
			return err
		}
		stop.Record()
		if err := stop.Synchronize(); err != nil {
			return err
		}
		d, _ := Elapsed(start, stop)
		t.Logf("L2 flush of %d MiB took %v", timer.FlushBytes()>>20, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestOutOfMemoryIsRecognised(t *testing.T) {
	w := newWorker(t)
	err := w.Do(func() error {
		_, err := Alloc(w.Device().MemoryBytes * 4)
		return err
	})
	if !IsOutOfMemory(err) || !strings.Contains(err.Error(), "CUDA_ERROR_OUT_OF_MEMORY") {
		t.Errorf("allocating 4x the device memory: %v, want CUDA_ERROR_OUT_OF_MEMORY", err)
	}
}

// Runs last: the fault ends this worker's context (and only its own).
func TestFaultNamesTheCUDAError(t *testing.T) {
	w := newWorker(t)
	err := w.Do(func() error {
		mod, err := LoadModule([]byte(probePTX))
		if err != nil {
			return err
		}
		fn, err := mod.Function("write_null")
		if err != nil {
			return err
		}
		if err := fn.Launch(Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0); err != nil {
			return err
		}
		return Synchronize()
	})
	if !IsContextLost(err) || !strings.Contains(err.Error(), "CUDA_ERROR_ILLEGAL_ADDRESS") {
		t.Errorf("a store to address 0: %v, want CUDA_ERROR_ILLEGAL_ADDRESS and a lost context", err)
	}
}

// CUPTI's records reach the call that was marked when it launched them,
// memsets included, and nothing launched unmarked reaches any call.
func TestActivityTraceTiesActivitiesToMarks(t *testing.T) {
	trace, err := StartActivityTrace()
	if err != nil {
		t.Skipf("no CUPTI: %v", err)
	}
	t.Logf("CUPTI from %s", trace.Library())
	w := newWorker(t)
	err = withEchoParams(w, func(fn *Function, out *Buffer) error {
		launch := func() error {
			return fn.Launch(Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, out.Arg(), Int32(1), Float32(2), Uint64(3))
		}
		if _, err := trace.Drain(); err != nil {
			return err
		}
		steps := []func() error{
			launch, // unmarked
			func() error { return trace.Mark(7) }, func() error { return out.FillWords(0) }, launch, trace.Unmark,
			func() error { return trace.Mark(8) }, launch, trace.Unmark,
			launch, Synchronize, // unmarked
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		acts, err := trace.Drain()
		if err != nil {
			return err
		}
		var got []string
		for i, a := range acts {
			if a.DurationNs() == 0 || i > 0 && a.StartNs < acts[i-1].StartNs {
				t.Errorf("activity %d (%s) has no duration or is out of order: %+v", i, a.Name, a)
			}
			mark := "-"
			if a.Marked {
				mark = fmt.Sprint(a.Mark)
			}
			got = append(got, a.Name+"@"+mark)
		}
		want := "echo_params@-,memset@7,echo_params@7,echo_params@8,echo_params@-"
		if strings.Join(got, ",") != want {
			t.Errorf("activities %s, want %s", strings.Join(got, ","), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
