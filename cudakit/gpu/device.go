package gpu

import "fmt"

// DeviceInfo describes one GPU, as the driver reports it.
type DeviceInfo struct {
	Ordinal         int
	Name            string
	Major, Minor    int     // compute capability
	Multiprocessors int     // SMs
	L2Bytes         int64   // L2 cache size
	MemoryBytes     int64   // total device memory
	SMClockMHz      float64 // maximum SM clock
	MemClockMHz     float64 // maximum memory clock
	MemBusWidthBits int
	DriverVersion   int // cuDriverGetVersion: 1000*major + 10*minor
	// MaxSharedPerBlockOptin is the most shared memory one block may use
	// after opting in with SetMaxDynamicSharedBytes.
	MaxSharedPerBlockOptin int
	MaxThreadsPerBlock     int
	// UUID is cuDeviceGetUuid's, as nvidia-smi prints it: "GPU-…".
	UUID string
}

// ComputeCapability is "major.minor", e.g. "9.0".
func (d DeviceInfo) ComputeCapability() string { return fmt.Sprintf("%d.%d", d.Major, d.Minor) }

// DriverCUDAVersion is the CUDA version the driver supports, e.g. "13.0".
func (d DeviceInfo) DriverCUDAVersion() string {
	return fmt.Sprintf("%d.%d", d.DriverVersion/1000, d.DriverVersion%1000/10)
}

// denseFP16FLOPPerClock is the dense fp16 tensor-core throughput of one SM
// per clock, by compute capability, from NVIDIA's architecture whitepapers
// (A100: 312 TF at 108 SMs and 1410 MHz; L4: 121 TF at 58 SMs and 2040 MHz;
// H100 SXM: 989 TF at 132 SMs and 1830 MHz).
var denseFP16FLOPPerClock = map[[2]int]float64{
	{8, 0}: 2048,
	{8, 6}: 1024,
	{8, 9}: 1024,
	{9, 0}: 4096,
}

// PeakTFLOPS is the dense fp16 tensor peak: SMs × maximum SM clock × FLOP
// per clock per SM. It is 0 for a compute capability this table does not
// know. The maximum clock is the boost clock the driver reports, so the
// figure can exceed NVIDIA's datasheet, which quotes a lower clock (H100 SXM:
// 1830 MHz in the datasheet, 1980 MHz reported).
func (d DeviceInfo) PeakTFLOPS() float64 {
	perClock, ok := denseFP16FLOPPerClock[[2]int{d.Major, d.Minor}]
	if !ok {
		return 0
	}
	return float64(d.Multiprocessors) * d.SMClockMHz * 1e6 * perClock / 1e12
}

// PeakGBps is the memory bandwidth peak: two transfers per memory clock
// (double data rate) × bus width.
func (d DeviceInfo) PeakGBps() float64 {
	return 2 * d.MemClockMHz * 1e6 * float64(d.MemBusWidthBits) / 8 / 1e9
}
