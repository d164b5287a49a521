//go:build cuda

package gpu

import (
	"fmt"

	"gorgonia.org/cu"
)

// DeviceCount is the number of CUDA devices.
func DeviceCount() (int, error) {
	n, err := cu.NumDevices()
	return n, wrap("count CUDA devices", err)
}

// QueryDevice describes device ordinal. It needs no context.
func QueryDevice(ordinal int) (DeviceInfo, error) {
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return DeviceInfo{}, wrap(fmt.Sprintf("get CUDA device %d", ordinal), err)
	}
	info := DeviceInfo{Ordinal: ordinal, DriverVersion: cu.Version()}
	if info.Name, err = dev.Name(); err != nil {
		return DeviceInfo{}, wrap("device name", err)
	}
	uuid, err := dev.UUID()
	if err != nil {
		return DeviceInfo{}, wrap("device UUID", err)
	}
	info.UUID = "GPU-" + uuid.String()
	if info.MemoryBytes, err = dev.TotalMem(); err != nil {
		return DeviceInfo{}, wrap("device memory", err)
	}
	attrs := []struct {
		attr cu.DeviceAttribute
		set  func(int)
	}{
		{cu.ComputeCapabilityMajor, func(v int) { info.Major = v }},
		{cu.ComputeCapabilityMinor, func(v int) { info.Minor = v }},
		{cu.MultiprocessorCount, func(v int) { info.Multiprocessors = v }},
		{cu.L2CacheSize, func(v int) { info.L2Bytes = int64(v) }},
		{cu.ClockRate, func(v int) { info.SMClockMHz = float64(v) / 1000 }},
		{cu.MemoryClockRate, func(v int) { info.MemClockMHz = float64(v) / 1000 }},
		{cu.GlobalMemoryBusWidth, func(v int) { info.MemBusWidthBits = v }},
		{cu.MaxThreadsPerBlock, func(v int) { info.MaxThreadsPerBlock = v }},
		{attrMaxSharedPerBlockOptin, func(v int) { info.MaxSharedPerBlockOptin = v }},
	}
	for _, a := range attrs {
		v, err := dev.Attribute(a.attr)
		if err != nil {
			return DeviceInfo{}, wrap(fmt.Sprintf("device attribute %d", a.attr), err)
		}
		a.set(v)
	}
	return info, nil
}
