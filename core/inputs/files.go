package inputs

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/flashcore/bench/sdk"
)

// File names inside a case's directory.
const (
	QFile      = "q.bin"
	KFile      = "k.bin"
	VFile      = "v.bin"
	OutputFile = "out.bin"
)

// WriteFiles writes Q, K and V into dir and returns the file names a
// PrepareRequest carries. The output file is named, not created: the
// backend writes it in Fetch.
func WriteFiles(dir string, t *Tensors) (sdk.Tensors, error) {
	files := sdk.Tensors{
		Q:      filepath.Join(dir, QFile),
		K:      filepath.Join(dir, KFile),
		V:      filepath.Join(dir, VFile),
		Output: filepath.Join(dir, OutputFile),
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{files.Q, t.Q}, {files.K, t.K}, {files.V, t.V}} {
		if err := os.WriteFile(f.path, f.data, 0o644); err != nil {
			return sdk.Tensors{}, fmt.Errorf("write inputs: %w", err)
		}
	}
	return files, nil
}
