package cudahopper

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/flashcore/bench/cudakit/cudatest"
	"github.com/flashcore/bench/internal/cudafile"
)

// ptxasProblems lists what the gate refuses in a report (read by
// cudafile.ParseResources, which describe uses too): a kernel missing
// from it, a stack frame or spills (the accumulators went to local memory),
// more registers than 384 threads can have at one block per SM (setmaxnreg
// then moves them; the decode kernels, of 128 threads, are held to the same
// 168, which leaves them three blocks an SM), and the warnings ptxas gives
// when it ignores setmaxnreg (C7508) or serialises wgmma.
func ptxasProblems(report string, kernels []string) []string {
	var problems []string
	entries := cudafile.ParseResources(report)
	for _, k := range kernels {
		if !slices.ContainsFunc(entries, func(e cudafile.Resources) bool { return e.Symbol == k }) {
			problems = append(problems, k+": not in the ptxas report")
		}
	}
	for _, e := range entries {
		switch {
		case !e.Counted || !e.Framed:
			problems = append(problems, e.Symbol+": no resource lines")
		case e.StackBytes != 0 || e.SpillStores != 0 || e.SpillLoads != 0:
			problems = append(problems, e.Symbol+": "+strconv.Itoa(e.StackBytes)+" bytes stack, "+
				strconv.Itoa(e.SpillStores)+"/"+strconv.Itoa(e.SpillLoads)+" bytes spilled")
		case e.Registers > 65536/threads/8*8:
			problems = append(problems, e.Symbol+": "+strconv.Itoa(e.Registers)+" registers")
		}
	}
	for _, warning := range []string{"C7508", "setmaxnreg' ignored", "serialized"} {
		if strings.Contains(report, warning) {
			problems = append(problems, "ptxas warns: "+warning)
		}
	}
	return problems
}

// TestPtxasGate reads the report make cuda-kernels leaves beside the fatbin
// (make hopper-ptxas-gate runs just this).
func TestPtxasGate(t *testing.T) {
	report, err := os.ReadFile("kernel.ptxas.txt")
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("no kernel.ptxas.txt here: make cuda-kernels has not run")
	}
	if err != nil {
		t.Fatal(err)
	}
	kernels := slices.Concat(cudatest.InstantiatedKernels(kernelSource), cudatest.InstantiatedOpKernels(kernelSource, decodeOp))
	for _, p := range ptxasProblems(string(report), kernels) {
		t.Error(p)
	}
}

// The gate itself, on reports that pass and fail.
func TestPtxasProblems(t *testing.T) {
	entry := func(name, frame string, regs int) string {
		return "ptxas info    : Compiling entry function '" + name + "' for 'sm_90a'\n" +
			"ptxas info    : Function properties for " + name + "\n    " + frame + "\n" +
			"ptxas info    : Used " + strconv.Itoa(regs) + " registers, used 16 barriers\n"
	}
	clean := "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"
	tests := []struct {
		name, report string
		want         []string
	}{
		{"clean", entry("k1", clean, 168) + entry("k2", clean, 128), nil},
		{"spills", entry("k1", "16 bytes stack frame, 16 bytes spill stores, 8 bytes spill loads", 168) + entry("k2", clean, 168),
			[]string{"k1: 16 bytes stack, 16/8 bytes spilled"}},
		{"missing kernel", entry("k1", clean, 168), []string{"k2: not in the ptxas report"}},
		{"too many registers", entry("k1", clean, 168) + entry("k2", clean, 232), []string{"k2: 232 registers"}},
		{"setmaxnreg ignored", entry("k1", clean, 168) + entry("k2", clean, 168) +
			"ptxas info    : (C7508) Potential Performance Loss: 'setmaxnreg' ignored; unable to determine register count at entry.\n",
			[]string{"ptxas warns: C7508", "ptxas warns: setmaxnreg' ignored"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ptxasProblems(tc.report, []string{"k1", "k2"})
			if !slices.Equal(got, tc.want) {
				t.Errorf("problems = %q, want %q", got, tc.want)
			}
		})
	}
}
