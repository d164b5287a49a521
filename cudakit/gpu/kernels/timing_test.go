package kernels_test

import (
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/flashcore/bench/cudakit/gpu"
	"github.com/flashcore/bench/cudakit/gpu/kernels"
)

// Where make cuda-kernels has run, the timing fatbin must be built from the
// timing.cu this package embeds (cuda builds check the same at start).
func TestTimingFatbinMatchesTheSources(t *testing.T) {
	fatbin, err := os.ReadFile("timing.fatbin")
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("no timing.fatbin here: make cuda-kernels has not run")
	}
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("timing.fatbin.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := gpu.ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Verify(fatbin, kernels.Sources()); err != nil {
		t.Error(err)
	}
}
