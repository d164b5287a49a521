//go:build !cuda

package cudahopper

// Without the cuda tag no fatbin is embedded; the backend reports itself as
// built without CUDA.
var fatbin, manifest []byte
