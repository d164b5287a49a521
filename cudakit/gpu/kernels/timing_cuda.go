//go:build cuda

package kernels

import _ "embed"

// TimingFatbin is timing.cu compiled by make cuda-kernels.
//
//go:embed timing.fatbin
var TimingFatbin []byte

// TimingManifest is TimingFatbin's manifest.
//
//go:embed timing.fatbin.json
var TimingManifest []byte
