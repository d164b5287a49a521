//go:build !cuda

package cudav8

// Without the cuda tag no fatbin is embedded; the backend reports itself as
// built without CUDA.
var fatbin, manifest []byte
