//go:build cuda

package cudahopper

import _ "embed"

// fatbin is kernel.cu compiled for sm_90a by make cuda-kernels (mk/hopper.mk);
// manifest describes it.
var (
	//go:embed kernel.fatbin
	fatbin []byte
	//go:embed kernel.fatbin.json
	manifest []byte
)
