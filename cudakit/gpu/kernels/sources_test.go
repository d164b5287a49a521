package kernels

import (
	"strings"
	"testing"
)

func TestSourcesAreKeyedByRepositoryPath(t *testing.T) {
	sources := Sources()
	for _, name := range []string{"attention.cuh", "timing.cu"} {
		content, ok := sources[Dir+"/"+name]
		if !ok {
			t.Fatalf("Sources() lacks %s/%s; keys: %v", Dir, name, keys(sources))
		}
		if len(content) == 0 {
			t.Errorf("%s is empty", name)
		}
	}
	if !strings.Contains(string(sources[Dir+"/timing.cu"]), "flashcore_spin") {
		t.Error("timing.cu does not define flashcore_spin")
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
