package cudakit

import (
	"fmt"

	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/sdk"
)

// MinComputeCapability is the oldest GPU the kernels run on: cp.async and
// bf16 tensor cores need Ampere (8.0).
const MinComputeCapability = 80

// The methods by which the CUDA plugins take kernel times (sdk).
const (
	MethodCUPTISpin      = sdk.MethodCUPTISpin
	MethodCUDAEventsSpin = sdk.MethodCUDAEventsSpin
)

// ReasonNoCUDA is the unavailable reason of a build without the cuda tag.
const ReasonNoCUDA = "built without CUDA"

// baseDescription is what a backend says about itself before it knows
// anything about the device.
func baseDescription(spec Spec) sdk.Description {
	return sdk.Description{
		Name:     spec.Name,
		Version:  spec.Version,
		Build:    spec.Build,
		Device:   sdk.Device{Kind: "gpu"},
		Variants: []sdk.Variant{spec.Variant},
	}
}

// deviceDescription turns the driver's device facts into the contract's.
//
//lint:ignore U1000 used by the cuda build
func deviceDescription(d gpu.DeviceInfo) sdk.Device {
	return sdk.Device{
		Kind:              "gpu",
		Name:              d.Name,
		ComputeCapability: d.ComputeCapability(),
		Multiprocessors:   d.Multiprocessors,
		L2Bytes:           d.L2Bytes,
		MemoryBytes:       d.MemoryBytes,
		SMClockMHz:        d.SMClockMHz,
		MemClockMHz:       d.MemClockMHz,
		MemBusWidthBits:   d.MemBusWidthBits,
		Driver:            "CUDA " + d.DriverCUDAVersion(),
		Runtime:           "CUDA driver API (gorgonia.org/cu)",
		PeakTFLOPS:        d.PeakTFLOPS(),
		PeakGBps:          d.PeakGBps(),
		UUID:              d.UUID,
	}
}

// checkDevice says why the kernels cannot run on d, or nil. deviceCheck is
// the plugin's own (Spec.Device), or nil.
func checkDevice(d gpu.DeviceInfo, m gpu.Manifest, deviceCheck func(gpu.DeviceInfo) error) (gpu.Target, error) {
	if deviceCheck != nil {
		if err := deviceCheck(d); err != nil {
			return gpu.Target{}, err
		}
	}
	if d.Major*10+d.Minor < MinComputeCapability {
		return gpu.Target{}, fmt.Errorf("%s has compute capability %s; the kernels need %d.%d or newer",
			d.Name, d.ComputeCapability(), MinComputeCapability/10, MinComputeCapability%10)
	}
	target, ok := m.TargetFor(d.Major, d.Minor)
	if !ok {
		return gpu.Target{}, fmt.Errorf("the fatbin has no code for compute capability %s (cubins %v, PTX %v)",
			d.ComputeCapability(), m.Cubins, m.PTX)
	}
	return target, nil
}

// unsupported is a Prepare answer that refuses the case, saying why.
//
//lint:ignore U1000 used by the cuda build
func unsupported(format string, args ...any) sdk.Prepared {
	return sdk.Prepared{Diagnostics: []sdk.Diagnostic{{Severity: sdk.Unsupported, Summary: fmt.Sprintf(format, args...)}}}
}
