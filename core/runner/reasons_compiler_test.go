package runner

import (
	"os"
	"path/filepath"
	"testing"
)

// testdata/triton-mlir-failure.stderr.txt is constructed, not captured: it
// is laid out as Triton 3.x prints an MLIR pass failure on a GPU (the
// diagnostic, the op, the module as a reproducer, the pipeline's error,
// then Python's traceback ending in "PassManager::run failed").
func TestCompilerErrorIsTheFirstErrorLine(t *testing.T) {
	mlir, err := os.ReadFile(filepath.Join("testdata", "triton-mlir-failure.stderr.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, stderr, want string
	}{
		{"Triton's MLIR failure", string(mlir), "/home/user/kernels/my_fa.py:31:24: error: 'tt.dot' op expected the inner " +
			"dimensions of the operands to match, got 'tensor<64x32xf16>' and 'tensor<64x64xf16>'"},
		{"gcc", "In file included from k.cu:3:\nk.h:12:5: error: 'foo' was not declared in this scope\n", "k.h:12:5: error: 'foo' was not declared in this scope"},
		{"nvcc", "k.cu(41): error: identifier \"q_tile\" is undefined\n", "k.cu(41): error: identifier \"q_tile\" is undefined"},
		{"a location-less error", "note: x\nerror: unknown target 'sm_100'\n", "error: unknown target 'sm_100'"},
		{"a Python traceback", "Traceback (most recent call last):\n  File \"k.py\", line 3\nRuntimeError: PassManager::run failed\n", ""},
		{"an error word in a message", "ValueError: error: this is Python's message\nprocessing error: 3 left\n", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := compilerError(tt.stderr); got != tt.want {
				t.Errorf("compilerError = %q, want %q", got, tt.want)
			}
		})
	}
}
