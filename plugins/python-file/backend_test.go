package pythonfile

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/internal/bridge/bridgetest"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops/rmsnorm"
	"github.com/flashcore/bench/sdk"
)

// example is the plain PyTorch example, seen from this folder.
var example = filepath.Join("..", "..", "examples", "python", "torch_attention.py")

func TestParseArgs(t *testing.T) {
	abs, _ := filepath.Abs("kernels/my_fa.py")
	tests := []struct {
		args       []string
		name, file string
		err        string
	}{
		{host.PythonFileArgs("my-fa", "kernels/my_fa.py"), "my-fa", abs, ""},
		{[]string{"--file", "kernels/my_fa.py"}, "my_fa", abs, ""},
		{nil, "", "", "it is no backend by itself"},
		{[]string{"--name", "x"}, "", "", "it is no backend by itself"},
		{[]string{"--frobnicate"}, "", "", "python-file: flag provided but not defined: -frobnicate"},
	}
	for _, tt := range tests {
		name, file, err := parseArgs(tt.args)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want one containing %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil || name != tt.name || file != tt.file {
			t.Errorf("%q: got %q %q %v, want %q %q", tt.args, name, file, err, tt.name, tt.file)
		}
	}
}

// Started with no file, the plugin is no backend, and says how it is used.
func TestWithoutAFileItIsUnavailable(t *testing.T) {
	d, err := newBackend(nil).Describe(context.Background())
	if err != nil || d.Available || !strings.Contains(d.UnavailableReason, "[[backends]] python") {
		t.Errorf("Describe = %+v, %v; want unavailable, saying how to name a file", d, err)
	}
}

// The plugin binary, started through go-plugin with the arguments the host
// passes, serving the plain PyTorch example on this machine's device.
func TestServesAFileThroughGoPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin and starts torch")
	}
	bridgetest.RequireTorch(t)
	file, _ := filepath.Abs(example)
	backend := bridgetest.StartPlugin(t, bridgetest.Plugin(t, "python-file"), host.PythonFileArgs("my-attention", file)...)
	d, err := backend.Describe(bridgetest.Context(t, 2*time.Minute))
	if err != nil || !d.Available {
		t.Fatalf("Describe = %+v, %v", d, err)
	}
	if d.Name != "my-attention" || len(d.Variants) != 1 || d.Variants[0].Name != "my-attention" {
		t.Fatalf("Describe: name %q, variants %+v; want one variant my-attention", d.Name, d.Variants)
	}
	if !strings.Contains(d.Build, file) {
		t.Errorf("Build %q does not name the file", d.Build)
	}
	m := bridgetest.QuickMeasurement()
	for i, s := range []sdk.Shape{
		bridgetest.Shape(1, 4, 2, 33, 47, 64, true, sdk.FP16),
		bridgetest.Shape(2, 2, 2, 24, 24, 32, false, sdk.FP32),
	} {
		c := bridgetest.NewCase(t, "c"+string(rune('0'+i)), "my-attention", s, uint64(i))
		if out := bridgetest.RunCase(t, backend, c, &m); out.Skip != nil {
			t.Errorf("%s skipped: %s", s, out.Skip.Summary)
		}
	}
}

// A file that fails to import leaves the backend unavailable, with the
// file, the line and the import error's last line as the reason.
func TestAFileThatFailsToImportIsUnavailable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin and starts torch")
	}
	bridgetest.RequireTorch(t)
	file := filepath.Join(t.TempDir(), "my_fa.py")
	if err := os.WriteFile(file, []byte("import torch\nfrom flash_attn_not_here import flash_attn_func\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	backend := bridgetest.StartPlugin(t, bridgetest.Plugin(t, "python-file"), host.PythonFileArgs("my-fa", file)...)
	d, err := backend.Describe(bridgetest.Context(t, 2*time.Minute))
	want := file + ":2: import failed: ModuleNotFoundError: No module named 'flash_attn_not_here'"
	if err != nil || d.Available || d.UnavailableReason != want {
		t.Errorf("Describe = %+v, %v\nwant unavailable with %q", d, err, want)
	}
}

// The rmsnorm examples through the plugin binary: a file that defines
// rmsnorm(x, weight, *, eps) alone offers the rmsnorm op alone, and its
// outputs, the timed ones too, pass rmsnorm's check. The Triton one runs
// under Triton's interpreter where there is no GPU.
func TestServesAnRMSNormFileThroughGoPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin and starts torch")
	}
	bridgetest.RequireTorch(t)
	binary := bridgetest.Plugin(t, "python-file")
	for _, name := range []string{"rmsnorm_torch.py", "rmsnorm_triton.py"} {
		t.Run(name, func(t *testing.T) {
			file, _ := filepath.Abs(filepath.Join("..", "..", "examples", "python", name))
			backend := bridgetest.StartPlugin(t, binary, host.PythonFileArgs("my-norm", file)...)
			d, err := backend.Describe(bridgetest.Context(t, 2*time.Minute))
			if err != nil {
				t.Fatalf("Describe: %v", err)
			}
			if !d.Available && name == "rmsnorm_triton.py" && strings.Contains(d.UnavailableReason, "No module named 'triton'") {
				t.Skipf("unavailable: %s", d.UnavailableReason)
			}
			if !d.Available {
				t.Fatalf("Describe: unavailable: %s", d.UnavailableReason)
			}
			if len(d.Variants) != 1 || !slices.Equal(d.Variants[0].Ops, []string{rmsnorm.Name}) {
				t.Fatalf("Describe: variants %+v, want one offering rmsnorm alone", d.Variants)
			}
			m := bridgetest.QuickMeasurement()
			for i, p := range []op.Params{
				{"rows": "5", "cols": "300", "dtype": "fp16"},
				{"rows": "3", "cols": "5000", "dtype": "fp32"},
			} {
				c := bridgetest.NewOpCase(t, "my-norm", rmsnorm.Name, p, uint64(i))
				if out := bridgetest.RunOpCase(t, backend, c, &m); out.Skip != nil {
					t.Errorf("%s skipped: %s", c.Case.ID, out.Skip.Summary)
				}
			}
			c := bridgetest.NewCase(t, "attention", "my-norm", bridgetest.Shape(1, 2, 2, 8, 8, 16, false, sdk.FP16), 1)
			want := "my-norm: op attention not supported"
			if out := bridgetest.RunCase(t, backend, c, nil); out.Skip == nil || out.Skip.Summary != want {
				t.Errorf("attention on an rmsnorm file: %+v, want the skip %q", out.Skip, want)
			}
		})
	}
}
