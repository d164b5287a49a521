package cudatest

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/flashcore/bench/conformance"
	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/runner"
	"github.com/flashcore/bench/core/suite"
	"github.com/flashcore/bench/cudakit"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/sdk"
)

// anyInstantiation matches every kernel instantiation macro line of a
// kernel.cu, e.g. "RMSNORM_KERNEL(rmsnorm_fp16_v8, half, 8)".
var anyInstantiation = regexp.MustCompile(`(?m)^[A-Z0-9_]+_KERNEL\((\w+),`)

// InstantiatedOpKernels lists the extern "C" kernels of an op other than
// attention that a kernel.cu instantiates: those named <op>_… (the names
// cudakit.OpKernelName gives).
func InstantiatedOpKernels(kernelSource []byte, opName string) []string {
	var names []string
	for _, m := range anyInstantiation.FindAllSubmatch(kernelSource, -1) {
		if name := string(m[1]); len(name) > len(opName) && name[:len(opName)+1] == opName+"_" {
			names = append(names, name)
		}
	}
	return names
}

// OpCases are the cases of an op at each of params (every axis set), with
// normally distributed inputs.
func OpCases(t *testing.T, opName string, params ...op.Params) []op.Case {
	t.Helper()
	o, err := ops.Lookup(opName)
	if err != nil {
		t.Fatal(err)
	}
	cases := make([]op.Case, len(params))
	for i, p := range params {
		p = ops.Complete(o, p)
		cases[i] = op.Case{ID: o.CaseID(p, op.Normal), Op: opName, Params: p, Distribution: op.Normal}
	}
	return cases
}

// opFiles names the files of case c in dir as the host does, one per
// tensor of the op: its inputs, the outputs Fetch writes and the outputs
// Run writes, each in the op's order.
func opFiles(c op.Case, dir string) (inputs, outputs, timed []sdk.TensorFile) {
	spec := ops.Of(c).Spec()
	files := func(prefix string, ts []op.Tensor) []sdk.TensorFile {
		out := make([]sdk.TensorFile, len(ts))
		for i, tt := range ts {
			out[i] = sdk.TensorFile{Name: tt.Name, Path: filepath.Join(dir, prefix+tt.Name+".bin"),
				DType: tt.ElemType(c.Params), Dims: tt.Shape(c.Params)}
		}
		return out
	}
	return files("", spec.InputsOf(c.Params)), files("out-", spec.OutputsOf(c.Params)), files("timed-", spec.OutputsOf(c.Params))
}

// OpCaseOf is what the kit gives a plan for case c (of an op other than
// attention, or of attention in a mode other than forward): its params and
// the tensor files the host would name for it, in /in.
func OpCaseOf(c op.Case) cudakit.OpCase {
	inputs, outputs, _ := opFiles(c, "/in")
	return cudakit.OpCase{Op: c.Op, Params: c.Params.Clone(), Inputs: inputs, Outputs: outputs}
}

// tensorNames are the names of the case's tensors, inputs first.
func tensorNames(c cudakit.OpCase) []string {
	var names []string
	for _, f := range slices.Concat(c.Inputs, c.Outputs) {
		names = append(names, f.Name)
	}
	return names
}

// CheckOpPlans checks, without a GPU, that spec plans each of cases (of an
// op other than attention, with the tensor files the host would name for
// it), with every combination of the tunables that apply to the op, to
// kernels that kernelSource instantiates, with a launch that is well
// formed and names only the case's tensors, and that each kernel the
// source instantiates for the op is reached by some case. The plan is
// called directly: cases outside the declared capabilities (a dtype the
// variant does not declare for all its ops) check it too.
func CheckOpPlans(t *testing.T, spec cudakit.Spec, kernelSource []byte, cases []op.Case) {
	t.Helper()
	if err := spec.CheckOps(); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	opsSeen := map[string]bool{}
	for _, c := range cases {
		plan := spec.Ops[c.Op]
		if plan == nil {
			t.Errorf("%s: the spec has no plan for op %s", c.ID, c.Op)
			continue
		}
		opsSeen[c.Op] = true
		oc := OpCaseOf(c)
		defined := InstantiatedOpKernels(kernelSource, c.Op)
		for _, combo := range conformance.Combinations(conformance.TunablesOf(spec.Variant.Tunables, c.Op)) {
			what := c.ID
			if len(combo) > 0 {
				what += fmt.Sprint(" ", combo)
			}
			l, err := plan(oc, combo)
			if err != nil {
				t.Errorf("plan %s: %v", what, err)
				continue
			}
			for _, step := range l.Steps() {
				if !slices.Contains(defined, step.Function) {
					t.Errorf("plan %s: kernel %s is not instantiated in kernel.cu", what, step.Function)
				}
				used[step.Function] = true
			}
			checkLaunch(t, what, l, tensorNames(oc))
		}
	}
	for name := range opsSeen {
		defined := InstantiatedOpKernels(kernelSource, name)
		if len(defined) == 0 {
			t.Errorf("kernel.cu instantiates no %s_* kernel", name)
		}
		for _, k := range defined {
			if !used[k] {
				t.Errorf("kernel.cu instantiates %s, which no case of %s plans", k, name)
			}
		}
	}
}

// CheckOp runs each case (of an op other than attention, or of attention
// in any mode: ModeCases, attention.NewCase) through the backend in
// process, as flashcore run drives a row, and checks it by the op's own
// check with the default suite's tolerances: the loaded hash and the
// facts every case records, the checked run repeated bit-identically, a
// timed Run whose samples obey the contract and whose timed outputs pass
// the same check. It logs each case's kernel time, bandwidth and, for an
// op that counts FLOPs, throughput. It needs a backend that can run (a
// GPU, for the CUDA plugins).
func CheckOp(t *testing.T, backend sdk.Backend, cases []op.Case) {
	t.Helper()
	desc := available(t, backend)
	for _, c := range cases {
		t.Run(c.ID, func(t *testing.T) { checkOpCase(t, backend, desc, c) })
	}
}

func checkOpCase(t *testing.T, backend sdk.Backend, desc sdk.Description, c op.Case) {
	d := suite.Default()
	o := ops.Of(c)
	in := o.Generate(d.Seed, c)
	inputs, outputs, timed := opFiles(c, t.TempDir())
	for i, f := range inputs {
		if err := os.WriteFile(f.Path, in.Tensors[i].Data, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	prepared, err := backend.Prepare(ctx, ops.PrepareRequest(c, desc.Variants[0].Name, nil, inputs, outputs, in.SHA256))
	if err != nil || len(prepared.Diagnostics) > 0 {
		t.Fatalf("Prepare: %v %+v", err, prepared.Diagnostics)
	}
	defer func() {
		if err := backend.Release(ctx, sdk.ReleaseRequest{CaseID: c.ID}); err != nil {
			t.Errorf("Release: %v", err)
		}
	}()
	if prepared.LoadedSHA256 != in.SHA256 {
		t.Errorf("LoadedSHA256 = %q, want the hash of the inputs in order %q", prepared.LoadedSHA256, in.SHA256)
	}
	for _, key := range FactsEveryCaseRecords {
		if prepared.Facts[key] == "" {
			t.Errorf("Prepare: fact %s missing (facts: %v)", key, prepared.Facts)
		}
	}
	tol := d.TolerancesOf(c)
	var first [][]byte
	for run := 1; run <= max(d.Check.Repeat, 1); run++ {
		if _, err := backend.Fetch(ctx, sdk.FetchRequest{CaseID: c.ID}); err != nil {
			t.Fatalf("Fetch (checked run %d): %v", run, err)
		}
		got := readFiles(t, outputs)
		if run == 1 {
			checkReports(t, "checked run", o.Check(c, in, got, d.Check, tol))
			first = got
		} else if !slices.EqualFunc(got, first, bytes.Equal) {
			t.Errorf("nondeterministic: checked run %d differs from run 1", run)
		}
	}
	m := sdk.DefaultMeasurement()
	m.TimeCap = time.Second
	samples, err := backend.Run(ctx, sdk.RunRequest{CaseID: c.ID, Measurement: m, Output: timed[0].Path, Outputs: timed})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if why := cmp.Or(runner.SampleRuleViolation(samples, m), runner.StopRuleViolation(samples, m, 0)); why != "" {
		t.Errorf("Run: %s", why)
	}
	checkReports(t, "last timed call", o.Check(c, in, readFiles(t, timed), d.Check, tol))
	kernel := sdk.MedianDuration(samples.KernelTimes)
	work := o.Work(c, in)
	throughput := ""
	if work.FLOPs > 0 {
		throughput = fmt.Sprintf(", %.1f TFLOP/s", work.FLOPs/kernel.Seconds()/1e12)
	}
	t.Logf("TIMING %s %s %s L2: kernel %.2f µs (n=%d, noise %.2f%%, %.0f GB/s%s), call %.2f µs, %s, grid %s, block %s",
		desc.Name, c.ID, m.L2, us(kernel), len(samples.KernelTimes), 100*sdk.RelativeNoise(samples.KernelTimes),
		work.Bytes/kernel.Seconds()/1e9, throughput, us(sdk.MedianDuration(samples.CallTimes)),
		prepared.Facts["kernel_function"], prepared.Facts["grid"], prepared.Facts["block"])
}

func readFiles(t *testing.T, files []sdk.TensorFile) [][]byte {
	t.Helper()
	out := make([][]byte, len(files))
	for i, f := range files {
		data, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatalf("output %s: %v", f.Name, err)
		}
		out[i] = data
	}
	return out
}

func checkReports(t *testing.T, what string, reports []check.Report) {
	t.Helper()
	for i, r := range reports {
		if r.Verdict != check.Pass {
			t.Errorf("%s, output %d: %s %s (max abs err %.3g, rel L2 %.3g, %d unwritten, %d of %d rows checked)",
				what, i+1, r.Verdict, r.Reason, r.MaxAbsErr, r.RelL2Err, r.Unwritten, r.RowsChecked, r.RowsTotal)
		}
	}
}
