package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestDoctorPython reads what the Python probe prints, as the doctor shows it.
func TestDoctorPython(t *testing.T) {
	tests := []struct {
		name, out string
		err       error
		want      []string
	}{
		{"gpu", `{"python": "3.12.3", "torch": "2.11.0+cu130", "cuda": true, "triton": "3.6.0"}`, nil,
			[]string{"torch|2.11.0+cu130, CUDA available|pytorch-sdpa runs on the GPU", "triton|3.6.0|triton runs its kernels on the GPU"}},
		{"cpu", `{"python": "3.11.7", "torch": "2.11.0", "cuda": false, "triton": "3.6.0"}`, nil,
			[]string{"torch|2.11.0, CPU only|pytorch-sdpa runs on the CPU", "triton|3.6.0|triton runs under its CPU interpreter (slow, small shapes)"}},
		{"no torch", `{"python": "3.11.7", "torch_error": "ModuleNotFoundError: No module named 'torch'", "triton_error": "ModuleNotFoundError: No module named 'triton'"}`, nil,
			[]string{"torch|missing: ModuleNotFoundError: No module named 'torch'|pytorch-sdpa and triton are unavailable; make setup installs it",
				"triton|missing: ModuleNotFoundError: No module named 'triton'|the triton backend is unavailable"}},
		{"no python", "", errors.New("exec: not found"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := machineProbe{run: func(context.Context, string, ...string) (string, error) { return tt.out, tt.err }}
			fs := p.python(context.Background())
			if tt.err != nil {
				if len(fs) != 1 || !strings.Contains(fs[0].Found, "does not run") {
					t.Fatalf("got %+v, want one finding saying Python does not run", fs)
				}
				return
			}
			var got []string
			for _, f := range fs[1:] {
				got = append(got, f.Area+"|"+f.Found+"|"+f.Means)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
