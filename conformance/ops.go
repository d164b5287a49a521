package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/sdk"
)

// checkOps runs the example cases of every op other than attention that
// the variant lists (ops.Examples), by the rules of the attention cases:
// the loaded hash, repeated checked runs bit-identical and checked by the
// op against its reference with the default suite's tolerances, a timed
// Run whose samples obey the contract and whose last output passes too.
// A case outside the variant's declared capabilities is not run.
func (k *kit) checkOps(t *testing.T, v sdk.Variant) {
	for _, name := range v.Ops {
		if name == "attention" {
			continue
		}
		if _, err := ops.Lookup(name); err != nil {
			t.Errorf("variant %s lists op %q: %v", v.Name, name, err)
			continue
		}
		ran := 0
		for _, c := range ops.Examples(name) {
			if ops.Unsupported(v, c) != "" {
				continue
			}
			if n := k.opts.MaxCasesPerVariant; n > 0 && ran >= n {
				break
			}
			ran++
			t.Run(c.ID, func(t *testing.T) {
				skip, err := k.checkOpCase(v, c)
				switch {
				case err != nil:
					t.Fatal(err)
				case skip != "":
					t.Skipf("backend declined at run time: %s", skip)
				}
			})
		}
		if ran == 0 {
			t.Errorf("variant %s lists op %s, but no example case fits its capabilities %+v", v.Name, name, v.CapabilitiesOf(name))
		}
	}
}

// checkOpCase takes one case of an op other than attention through the
// lifecycle, with one timed Run, hot.
func (k *kit) checkOpCase(v sdk.Variant, c op.Case) (skip string, err error) {
	return k.runCase(v, c, nil, []sdk.L2Mode{sdk.L2Hot})
}

// runCase takes a case of any op through the lifecycle the runner drives:
// Prepare on the inputs the host would write (the loaded hash must be
// theirs), the checked runs, a timed Run per mode, and Release. It returns
// the reason of an allowed run-time refusal, or what broke a rule.
func (k *kit) runCase(v sdk.Variant, c op.Case, tunables map[string]string, modes []sdk.L2Mode) (skip string, err error) {
	// The inputs go in the plugin's own workspace: behind its wall it can
	// read nowhere else in the temporary directories.
	dir, err := k.inst.MakeDir(k.inst.Workspace(), "case-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	in := ops.Of(c).Generate(defaults().Seed, c)
	inputs, err := writeInputs(dir, in)
	if err != nil {
		return "", err
	}
	outputs := ops.OutputFiles(c, dir, "out")
	prepared, err := call(k, func(ctx context.Context, api sdk.Backend) (sdk.Prepared, error) {
		return api.Prepare(ctx, ops.PrepareRequest(c, v.Name, tunables, inputs, outputs, in.SHA256))
	})
	if err != nil {
		return "", fmt.Errorf("Prepare: %w", err)
	}
	defer func() {
		_, releaseErr := call(k, func(ctx context.Context, api sdk.Backend) (struct{}, error) {
			return struct{}{}, api.Release(ctx, sdk.ReleaseRequest{CaseID: c.ID})
		})
		if releaseErr != nil {
			err = errors.Join(err, fmt.Errorf("Release: %w", releaseErr))
		}
	}()
	if reason := unsupportedIn(prepared.Diagnostics); reason != "" {
		if k.opts.RuntimeSkipsAllowed {
			return reason, nil
		}
		return "", fmt.Errorf("Prepare declined a case inside the declared capabilities: %s", reason)
	}
	if err := k.preparedProblems(prepared, in.SHA256); err != nil {
		return "", err
	}
	if err := k.checkedRuns(c, in, outputs); err != nil {
		return "", err
	}
	for _, mode := range modes {
		if err := k.timedRun(c, in, ops.OutputFiles(c, dir, "timed-"+string(mode)), mode); err != nil {
			return "", err
		}
	}
	return "", nil
}

// writeInputs writes a case's inputs, read-only, as the host does.
func writeInputs(dir string, in *op.Inputs) ([]sdk.TensorFile, error) {
	files := ops.InputFiles(in, dir, "")
	for i, f := range files {
		if err := os.WriteFile(f.Path, in.Tensors[i].Data, 0o444); err != nil {
			return nil, err
		}
	}
	return files, nil
}

func readAll(files []sdk.TensorFile) ([][]byte, error) {
	out := make([][]byte, len(files))
	for i, f := range files {
		data, err := os.ReadFile(f.Path)
		if err != nil {
			return nil, fmt.Errorf("no output file for %s: %w", f.Name, err)
		}
		out[i] = data
	}
	return out, nil
}

// checkedRuns does the checked run as many times as the default suite's
// check repeats it: the first outputs must pass the op's check, the
// others must equal them bit for bit.
func (k *kit) checkedRuns(c op.Case, in *op.Inputs, outputs []sdk.TensorFile) error {
	var first [][]byte
	for run := 1; run <= max(defaults().Check.Repeat, 1); run++ {
		for _, f := range outputs {
			if err := os.RemoveAll(f.Path); err != nil {
				return err
			}
		}
		fetched, err := call(k, func(ctx context.Context, api sdk.Backend) (sdk.Fetched, error) {
			return api.Fetch(ctx, sdk.FetchRequest{CaseID: c.ID})
		})
		if err != nil {
			return fmt.Errorf("Fetch (checked run %d): %w", run, err)
		}
		if len(fetched.Diagnostics) > 0 {
			return fmt.Errorf("Fetch (checked run %d): diagnostics %+v", run, fetched.Diagnostics)
		}
		got, err := readAll(outputs)
		if err != nil {
			return fmt.Errorf("Fetch (checked run %d): %w", run, err)
		}
		if run == 1 {
			if err := opVerdict("output", c, in, got); err != nil {
				return err
			}
			first = got
			continue
		}
		for i := range got {
			if !bytes.Equal(got[i], first[i]) {
				return fmt.Errorf("nondeterministic: checked run %d differs from run 1 in output %s", run, outputs[i].Name)
			}
		}
	}
	return nil
}

// timedRun samples the case briefly in one L2 mode: the samples must obey
// the measurement, and the outputs of the last timed call must pass the
// same check as the checked run's.
func (k *kit) timedRun(c op.Case, in *op.Inputs, timed []sdk.TensorFile, mode sdk.L2Mode) error {
	m := quickMeasurement(mode)
	run := func() (sdk.Samples, error) {
		return call(k, func(ctx context.Context, api sdk.Backend) (sdk.Samples, error) {
			return api.Run(ctx, sdk.RunRequest{CaseID: c.ID, Measurement: m, Output: timed[0].Path, Outputs: timed})
		})
	}
	samples, err := run()
	if err == nil && onlyWarnings(samples.Diagnostics) {
		// A warning of the measurement, such as a host that stalled while
		// it queued the timed calls, says the machine was busy once; one
		// that comes back on a second Run is the backend's.
		samples, err = run()
	}
	if err != nil {
		return fmt.Errorf("Run (L2 %s): %w", mode, err)
	}
	if err := k.sampleProblems(samples, m); err != nil {
		return fmt.Errorf("Run (L2 %s): %w", mode, err)
	}
	got, err := readAll(timed)
	if err != nil {
		return fmt.Errorf("Run (L2 %s) wrote no timed output: %w", mode, err)
	}
	return opVerdict(fmt.Sprintf("output of the last timed call (L2 %s)", mode), c, in, got)
}

// opVerdict checks outputs by the op's own check and the default suite's
// tolerances for the case's outputs: the check `flashcore run` applies.
func opVerdict(what string, c op.Case, in *op.Inputs, outputs [][]byte) error {
	for i, r := range CheckOutputs(c, in, outputs) {
		if r.Verdict != check.Pass {
			return fmt.Errorf("%s %s: %s", what, ops.Of(c).Spec().OutputsOf(c.Params)[i].Name, verdict(what, r))
		}
	}
	return nil
}

// onlyWarnings says whether there are diagnostics and every one is a
// warning.
func onlyWarnings(diagnostics []sdk.Diagnostic) bool {
	for _, d := range diagnostics {
		if d.Severity != sdk.Warning {
			return false
		}
	}
	return len(diagnostics) > 0
}
