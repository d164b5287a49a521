package gpu

// FuncResources are the resources the driver reports for one loaded kernel.
type FuncResources struct {
	Registers          int // per thread
	LocalBytes         int // per thread: register spills and local arrays
	StaticSharedBytes  int // per block, declared __shared__
	ConstBytes         int
	MaxThreadsPerBlock int // beyond this a launch fails
	BinaryVersion      int // e.g. 90: the SASS the driver loaded
	PTXVersion         int // e.g. 78: the PTX ISA the code came from
}
