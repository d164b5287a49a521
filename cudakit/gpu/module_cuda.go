//go:build cuda

package gpu

import (
	"fmt"

	"gorgonia.org/cu"
)

// Module is a loaded fatbin, cubin or PTX image. Like every call below, it
// must be used on its Worker's thread (inside Worker.Do).
type Module struct {
	mod cu.Module
}

// LoadModule loads image (a fatbin) into the current context. The driver
// picks the cubin for the device or JIT-compiles the PTX (see
// Manifest.TargetFor).
func LoadModule(image []byte) (*Module, error) {
	mod, err := cu.LoadData(string(image))
	if err != nil {
		return nil, wrap("load kernel module", err)
	}
	return &Module{mod: mod}, nil
}

// Unload frees the module.
func (m *Module) Unload() error { return wrap("unload kernel module", m.mod.Unload()) }

// Function looks up an extern "C" kernel by name.
func (m *Module) Function(name string) (*Function, error) {
	fn, err := m.mod.Function(name)
	if err != nil {
		return nil, wrap(fmt.Sprintf("find kernel %s", name), err)
	}
	return &Function{name: name, fn: fn}, nil
}

// Function is one kernel of a Module.
type Function struct {
	name string
	fn   cu.Function
}

// Name is the kernel's name.
func (f *Function) Name() string { return f.name }

// Resources reads the kernel's resource attributes from the driver.
func (f *Function) Resources() (FuncResources, error) {
	var r FuncResources
	attrs := []struct {
		attr cu.FunctionAttribute
		dst  *int
	}{
		{cu.NumRegs, &r.Registers},
		{cu.LocalSizeBytes, &r.LocalBytes},
		{cu.SharedSizeBytes, &r.StaticSharedBytes},
		{cu.ConstSizeBytes, &r.ConstBytes},
		{cu.FnMaxThreadsPerBlock, &r.MaxThreadsPerBlock},
		{cu.BinaryVersion, &r.BinaryVersion},
		{cu.PtxVersion, &r.PTXVersion},
	}
	for _, a := range attrs {
		v, err := f.fn.Attribute(a.attr)
		if err != nil {
			return FuncResources{}, wrap(fmt.Sprintf("attribute %d of %s", a.attr, f.name), err)
		}
		*a.dst = v
	}
	return r, nil
}

// SetMaxDynamicSharedBytes allows launches with up to bytes of dynamic
// shared memory. Above 48 KB a kernel must opt in this way.
func (f *Function) SetMaxDynamicSharedBytes(bytes int) error {
	return wrap(fmt.Sprintf("allow %d bytes of dynamic shared memory for %s", bytes, f.name), setMaxDynamicShared(f.fn, bytes))
}

// BlocksPerSM is the occupancy the driver computes: how many blocks of
// blockThreads threads and dynamicSharedBytes fit on one SM at once.
func (f *Function) BlocksPerSM(blockThreads, dynamicSharedBytes int) (int, error) {
	n, err := f.fn.MaxActiveBlocksPerMultiProcessor(blockThreads, int64(dynamicSharedBytes))
	return n, wrap(fmt.Sprintf("occupancy of %s", f.name), err)
}

// Launch queues the kernel on the default stream. It returns launch
// configuration errors; faults inside the kernel surface at the next
// synchronisation.
func (f *Function) Launch(grid, block Dim3, dynamicSharedBytes int, args ...Arg) error {
	slots, params := paramPointers(args)
	err := f.fn.Launch(grid.X, grid.Y, grid.Z, block.X, block.Y, block.Z, dynamicSharedBytes, cu.NoStream, params)
	_ = slots // kept alive until cuLaunchKernel has copied the parameters
	return wrap("launch "+f.name, err)
}
