// Package kernels holds the CUDA sources shared by FlashCore's kernels: the
// device helpers every attention kernel includes (attention.cuh) and the
// timing kernels of the measurement contract (timing.cu). Where to start:
// attention.cuh's header comment names the kernel parameter convention.
//
// The sources are embedded so that a plugin can check, at start, that its
// fatbin was compiled from exactly these bytes (gpu.Manifest.Verify). The
// timing fatbin itself is a build output (make cuda-kernels) and is embedded
// only in cuda builds.
package kernels

import (
	"embed"
	"io/fs"
	"path"
)

// Dir is this folder's path in the repository, as manifests name files.
const Dir = "cudakit/gpu/kernels"

//go:embed *.cuh *.cu
var sourceFS embed.FS

// Sources returns every embedded source keyed by repository path, e.g.
// "cudakit/gpu/kernels/attention.cuh".
func Sources() map[string][]byte {
	files := map[string][]byte{}
	entries, err := fs.ReadDir(sourceFS, ".")
	if err != nil {
		panic(err) // an embed.FS root always reads
	}
	for _, e := range entries {
		data, err := sourceFS.ReadFile(e.Name())
		if err != nil {
			panic(err)
		}
		files[path.Join(Dir, e.Name())] = data
	}
	return files
}
