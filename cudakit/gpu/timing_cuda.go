//go:build cuda

package gpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/flashcore/bench/cudakit/gpu/kernels"
)

// Timer runs the measurement contract's device-side helpers (timing.cu):
// the spin kernel that holds the stream while the host queues a sample and
// reads the SM clock meanwhile, and the L2 flush. Use it on its Worker's
// thread.
type Timer struct {
	module   *Module
	spin     *Function
	flush    *Function
	clocks   *Buffer // float32 MHz per spin, a ring of slots
	slots    int
	spins    int // spins since ResetClocks
	flushBuf *Buffer
	l2Bytes  int64
	salt     uint32
	manifest Manifest
}

// NewTimer loads the timing kernels, after checking that their fatbin was
// built from the embedded timing.cu. clockSlots bounds how many spin clock
// readings are kept (the latest ones).
func NewTimer(device DeviceInfo, clockSlots int) (*Timer, error) {
	manifest, err := ParseManifest(kernels.TimingManifest)
	if err != nil {
		return nil, err
	}
	if err := manifest.Verify(kernels.TimingFatbin, kernels.Sources()); err != nil {
		return nil, err
	}
	t := &Timer{slots: max(clockSlots, 1), l2Bytes: device.L2Bytes, manifest: manifest}
	if err := t.load(); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

func (t *Timer) load() (err error) {
	if t.module, err = LoadModule(kernels.TimingFatbin); err != nil {
		return err
	}
	if t.spin, err = t.module.Function("flashcore_spin"); err != nil {
		return err
	}
	if t.flush, err = t.module.Function("flashcore_flush_l2"); err != nil {
		return err
	}
	t.clocks, err = Alloc(int64(t.slots) * 4)
	return err
}

// Manifest describes the timing fatbin.
func (t *Timer) Manifest() Manifest { return t.manifest }

// Spin queues the spin kernel for d and records the SM clock it sees in the
// next slot.
func (t *Timer) Spin(d time.Duration) error {
	slot := t.spins % t.slots
	t.spins++
	return t.spin.Launch(Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0,
		Uint64(uint64(d.Nanoseconds())), t.clocks.Arg(), Int32(int32(slot)))
}

// ResetClocks forgets the clock readings taken so far.
func (t *Timer) ResetClocks() { t.spins = 0 }

// Clocks returns the SM clocks (MHz) of the last n spins, oldest first; it
// synchronises with the device. Fewer come back when fewer were kept.
func (t *Timer) Clocks(n int) ([]float64, error) {
	n = min(n, t.spins, t.slots)
	if n <= 0 {
		return nil, nil
	}
	raw := make([]byte, t.clocks.Size())
	if err := t.clocks.Download(raw); err != nil {
		return nil, err
	}
	out := make([]float64, 0, n)
	for i := t.spins - n; i < t.spins; i++ {
		slot := i % t.slots
		out = append(out, float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*slot:]))))
	}
	return out, nil
}

// FlushBytes is how much FlushL2 writes: twice the L2.
func (t *Timer) FlushBytes() int64 { return 2 * t.l2Bytes }

// FlushL2 queues a kernel that writes FlushBytes, evicting everything else
// from L2. The buffer is allocated on first use.
func (t *Timer) FlushL2() error {
	if t.flushBuf == nil {
		if t.l2Bytes <= 0 {
			return fmt.Errorf("gpu: flush L2: the device reports no L2 size")
		}
		buf, err := Alloc(t.FlushBytes())
		if err != nil {
			return err
		}
		t.flushBuf = buf
	}
	t.salt++
	words := uint64(t.flushBuf.Size() / 16)
	const threads = 256
	blocks := int(min((words+threads-1)/threads, 65535))
	return t.flush.Launch(Dim3{blocks, 1, 1}, Dim3{threads, 1, 1}, 0,
		t.flushBuf.Arg(), Uint64(words), Int32(int32(t.salt)))
}

// Close frees the timer's buffers and module.
func (t *Timer) Close() error {
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	keep(t.flushBuf.Free())
	keep(t.clocks.Free())
	if t.module != nil {
		keep(t.module.Unload())
	}
	return first
}
