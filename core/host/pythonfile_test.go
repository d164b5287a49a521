package host

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestWithPythonFiles(t *testing.T) {
	runner := Plugin{Name: PythonFileRunner, Path: "/bin/flashcore-backend-python-file"}
	cpu := Plugin{Name: "cpu-reference", Path: "/bin/flashcore-backend-cpu-reference"}
	triton := Plugin{Name: "triton", Path: "/bin/flashcore-backend-triton"}
	abs, _ := filepath.Abs("kernels/my_fa.py")
	tests := []struct {
		name  string
		found []Plugin
		files []PythonFile
		want  []Plugin
		err   string
	}{
		{"the runner is no backend", []Plugin{cpu, runner}, nil, []Plugin{cpu}, ""},
		{"a file becomes a plugin on the runner, first", []Plugin{cpu, runner},
			[]PythonFile{{Name: "my-fa", File: "kernels/my_fa.py"}},
			[]Plugin{{Name: "my-fa", Path: runner.Path, PythonFile: abs}, cpu}, ""},
		{"a file shadows a binary of its name", []Plugin{triton, runner, cpu},
			[]PythonFile{{Name: "triton", File: "kernels/my_fa.py"}},
			[]Plugin{{Name: "triton", Path: runner.Path, PythonFile: abs}, cpu}, ""},
		{"no runner", []Plugin{cpu}, []PythonFile{{Name: "my-fa", File: "kernels/my_fa.py"}}, nil,
			"backend my-fa is a Python file (kernels/my_fa.py), which runs in the plugin flashcore-backend-python-file; it was not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := WithPythonFiles(tt.found, tt.files)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, %v\nwant %+v", got, err, tt.want)
			}
		})
	}
}

func TestPythonFilePluginArgs(t *testing.T) {
	p := Plugin{Name: "my-fa", Path: "/bin/r", PythonFile: "/k/my_fa.py"}
	if got, want := p.args(), []string{"--name", "my-fa", "--file", "/k/my_fa.py"}; !reflect.DeepEqual(got, want) {
		t.Errorf("args %q, want %q", got, want)
	}
	if got := (Plugin{Name: "cpu-reference", Path: "/bin/c"}).args(); got != nil {
		t.Errorf("a plugin binary got args %q", got)
	}
	if got := PythonFileName("kernels/my_fa.py"); got != "my_fa" {
		t.Errorf("PythonFileName = %q, want my_fa", got)
	}
}

func TestWithCUDAFiles(t *testing.T) {
	runner := Plugin{Name: CUDAFileRunner, Path: "/bin/flashcore-backend-cuda-file"}
	cpu := Plugin{Name: "cpu-reference", Path: "/bin/flashcore-backend-cpu-reference"}
	abs, _ := filepath.Abs("kernels/splitkv.toml")
	got, err := WithCUDAFiles([]Plugin{cpu, runner}, []CUDAFile{{Name: "splitkv", File: "kernels/splitkv.toml"}})
	want := []Plugin{{Name: "splitkv", Path: runner.Path, CUDAFile: abs}, cpu}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v\nwant %+v", got, err, want)
	}
	if got, want := got[0].args(), []string{"--name", "splitkv", "--spec", abs}; !reflect.DeepEqual(got, want) {
		t.Errorf("args %q, want %q", got, want)
	}
	_, err = WithCUDAFiles([]Plugin{cpu}, []CUDAFile{{Name: "splitkv", File: "kernels/splitkv.toml"}})
	if err == nil || !strings.Contains(err.Error(), "backend splitkv is a CUDA file (kernels/splitkv.toml), which runs in the plugin flashcore-backend-cuda-file") {
		t.Errorf("without the runner: %v", err)
	}
	if got := CUDAFileName("kernels/splitkv.toml"); got != "splitkv" {
		t.Errorf("CUDAFileName = %q", got)
	}
}
