package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// seedRun is the H100 run of the seed suite kept in docs/results: real
// times, checks and the facts the CUDA plugins recorded.
const seedRun = "../docs/results/2026-11-22-h100-seed.json"

func TestAblateFromRecordedRun(t *testing.T) {
	for _, format := range []string{"table", "markdown"} {
		stdout, stderr, code := runMain(t, nil, "ablate", seedRun, "--format", format,
			"--chain", "cuda-scalar,cuda-wmma,cuda-v8,triton,pytorch-sdpa")
		if code != ExitOK {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		golden(t, "ablate-seed."+format, stdout)
	}
}

// TestAblateRunsTheChain runs real plugins: cpu-reference, then a step
// that echoes Q (a FAIL, so no time and no speedup), then cpu-reference's
// variant by name.
func TestAblateRunsTheChain(t *testing.T) {
	dir := pluginDir(t, map[string]string{"cpu-reference": "plugins/cpu-reference/cmd/flashcore-backend-cpu-reference", "test-echo": "internal/testplugins/echo"})
	out := filepath.Join(t.TempDir(), "ablate.json")
	stdout, stderr, code := runMain(t, map[string]string{"FLASHCORE_PLUGIN_PATH": dir},
		"ablate", "--suite", "testdata/gate.toml", "--chain", "cpu-reference,test-echo,cpu-reference:cpu-reference", "--out", out, "--format", "markdown")
	if code != ExitFindings {
		t.Fatalf("exit %d, want %d (the echo step FAILs)\n%s\n%s", code, ExitFindings, stdout, stderr)
	}
	for _, want := range []string{
		"| Step | Row", "|    1 | cpu-reference", "|    2 | test-echo     |", "|    3 | cpu-reference",
		"tiled online-softmax attention in pure Go", "test only:",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	again, _, _ := runMain(t, nil, "ablate", out, "--chain", "cpu-reference,test-echo,cpu-reference:cpu-reference", "--format", "markdown")
	if again != stdout {
		t.Errorf("drawn again from the saved run:\n%s\nwant\n%s", again, stdout)
	}
}

func TestAblateUsage(t *testing.T) {
	for name, args := range map[string][]string{
		"ablate-no-chain":   {"ablate", "--suite", "testdata/gate.toml"},
		"ablate-one-step":   {"ablate", "--chain", "cuda-v8"},
		"ablate-empty-step": {"ablate", "--chain", "cuda-v8,,triton"},
	} {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := runMain(t, nil, args...)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d\n%s", code, ExitUsage, stderr)
			}
			golden(t, "usage-"+name, stdout+stderr)
		})
	}
}

// TestGateRecordedResources judges the registers, spills, shared memory and
// occupancy cuda-v8 recorded on the H100: a limit below its 77 registers
// fails and names backend, case, figure and limit.
func TestGateRecordedResources(t *testing.T) {
	stdout, stderr, code := runMain(t, nil, "gate", seedRun, "--max-registers", "128", "--max-shared-bytes", "65536", "--min-occupancy", "0.25")
	if code != ExitOK {
		t.Errorf("sensible limits: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, _, code = runMain(t, nil, "gate", seedRun, "--max-registers", "64")
	if code != ExitGate || !strings.Contains(stdout, "FAIL cuda-v8 on b1-h8-s512-d64-fp16: registers 77 per thread, limit ≤ 64") {
		t.Errorf("a planted register limit: exit %d\n%s", code, stdout)
	}
	golden(t, "gate-seed-planted", stdout)
}
