//go:build cuda

package cudascalar

import _ "embed"

// fatbin is kernel.cu compiled by make cuda-kernels; manifest describes it.
var (
	//go:embed kernel.fatbin
	fatbin []byte
	//go:embed kernel.fatbin.json
	manifest []byte
)
