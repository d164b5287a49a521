package suite

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/sdk"
)

// build is step 3: it validates the decoded file and turns it into a Suite.
// It reports every problem it finds, not only the first.
func (d *decoder) build(in *decoded) (*Suite, error) {
	f := in.file
	s := &Suite{
		Name:        strings.TrimSpace(f.Name.Value),
		Description: f.Description.Value,
		Path:        d.path,
		Baseline:    f.Baseline.Value,
		Python:      f.Python.Value,
		PluginPath:  d.resolveAll(f.PluginPath.Value),
	}
	if s.Name == "" {
		d.problem("name", -1, "required: every suite has a name")
	}
	if f.Seed.Value < 0 {
		d.problem("seed", -1, "must not be negative, got %d", f.Seed.Value)
	}
	s.Seed = uint64(f.Seed.Value)
	d.nonEmpty("baseline", s.Baseline)
	if f.Python.Set {
		d.nonEmpty("python", s.Python)
	}
	s.Measurement, s.L2Modes, s.CallTimeout = d.measurement(f.Measurement)
	s.StartTimeout = f.Measurement.StartTimeout.Value
	if cpuCap := f.Measurement.CPUTimeCap; cpuCap.Set {
		if cpuCap.Value <= 0 {
			d.problem("measurement.cpu_time_cap", -1, "must be positive, got %s", cpuCap.Value)
		}
		s.CPUTimeCap = cpuCap.Value
	}
	if cpuMin := f.Measurement.CPUMinSamples; cpuMin.Set {
		d.atLeast("measurement.cpu_min_samples", cpuMin.Value, 1)
		if maxSamples := s.Measurement.MaxSamples; cpuMin.Value > maxSamples {
			d.problem("measurement.cpu_min_samples", -1, "must be at most max_samples (%d), got %d", maxSamples, cpuMin.Value)
		}
		s.CPUMinSamples = cpuMin.Value
	}
	s.Check = d.check(f.Check)
	s.Tolerances = d.tolerances(in.tolerances.dtypes)
	s.OutputTolerances = d.outputTolerances(in.tolerances.outputs, s.Tolerances)
	s.Gates = d.gates(f.Gates)
	s.Ablation = d.ablation(f.Ablation)
	s.Backends = d.backends(in.backends)
	s.Cases, s.Warnings = d.cases(in.sweeps, in.cases)
	if len(d.problems) > 0 {
		return nil, errors.Join(d.problems...)
	}
	return s, nil
}

func (d *decoder) nonEmpty(key, value string) {
	if strings.TrimSpace(value) == "" {
		d.problem(key, -1, "must not be empty")
	}
}

// resolve makes a path in the suite relative to the suite file's directory.
func (d *decoder) resolve(path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(filepath.Dir(d.path), path)
}

func (d *decoder) resolveAll(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = d.resolve(p)
	}
	return out
}

func (d *decoder) measurement(f fileMeasurement) (sdk.Measurement, []sdk.L2Mode, time.Duration) {
	m := sdk.Measurement{
		WarmupRuns:  f.WarmupRuns.Value,
		WarmupTime:  f.WarmupTime.Value,
		MinSamples:  f.MinSamples.Value,
		MaxSamples:  f.MaxSamples.Value,
		TargetNoise: f.TargetNoise.Value,
		TimeCap:     f.TimeCap.Value,
		CallSamples: f.CallSamples.Value,
		Placements:  f.Placements.Value,
	}
	d.atLeast("measurement.warmup_runs", m.WarmupRuns, 0)
	if m.WarmupTime < 0 {
		d.problem("measurement.warmup_time", -1, "must not be negative, got %s", m.WarmupTime)
	}
	d.atLeast("measurement.min_samples", m.MinSamples, 1)
	if m.MaxSamples < m.MinSamples {
		d.problem("measurement.max_samples", -1, "must be at least min_samples (%d), got %d", m.MinSamples, m.MaxSamples)
	}
	if !(m.TargetNoise >= 0 && m.TargetNoise < 1) {
		d.problem("measurement.target_noise", -1, "must be at least 0 and below 1 (0.005 is 0.5%%), got %g", m.TargetNoise)
	}
	if m.TimeCap <= 0 {
		d.problem("measurement.time_cap", -1, "must be positive, got %s", m.TimeCap)
	}
	d.atLeast("measurement.call_samples", m.CallSamples, 0)
	d.atLeast("measurement.placements", m.Placements, 1)
	if !f.Placements.Set {
		m.Placements = min(m.Placements, max(m.MinSamples, 1))
	}
	if f.Placements.Set && m.Placements > m.MinSamples && m.MinSamples >= 1 {
		d.problem("measurement.placements", -1, "must be at most min_samples (%d): every placement takes a sample, got %d", m.MinSamples, m.Placements)
	}
	if f.CallTimeout.Value <= 0 {
		d.problem("measurement.call_timeout", -1, "must be positive, got %s", f.CallTimeout.Value)
	}
	if f.StartTimeout.Value <= 0 {
		d.problem("measurement.start_timeout", -1, "must be positive, got %s", f.StartTimeout.Value)
	}
	modes := d.l2Modes(f.L2.Value)
	if len(modes) > 0 {
		m.L2 = modes[0]
	}
	return m, modes, f.CallTimeout.Value
}

func (d *decoder) l2Modes(names []string) []sdk.L2Mode {
	const key = "measurement.l2"
	if len(names) == 0 {
		d.problem(key, -1, `must list at least one of "hot" and "cold"`)
		return nil
	}
	var modes []sdk.L2Mode
	for _, name := range names {
		mode := sdk.L2Mode(name)
		switch {
		case mode != sdk.L2Hot && mode != sdk.L2Cold:
			d.problem(key, -1, `unknown L2 mode %q: want "hot" or "cold"`, name)
		case slices.Contains(modes, mode):
			d.problem(key, -1, "%q is listed twice", name)
		default:
			modes = append(modes, mode)
		}
	}
	return modes
}

func (d *decoder) check(f fileCheck) op.CheckSettings {
	c := op.CheckSettings{FullCheckMaxPairs: f.FullCheckMaxPairs.Value, SampledRows: f.SampledRows.Value, Repeat: f.Repeat.Value}
	if c.FullCheckMaxPairs < 0 {
		d.problem("check.full_check_max_pairs", -1, "must not be negative, got %d", c.FullCheckMaxPairs)
	}
	// Two rows at least: the first and the last are always checked.
	d.atLeast("check.sampled_rows", c.SampledRows, 2)
	d.atLeast("check.repeat", c.Repeat, 1)
	return c
}

func (d *decoder) tolerances(tables map[string]fileTolerance) map[sdk.DType]op.Tolerance {
	out := op.DefaultTolerances()
	for _, name := range sortedKeys(tables) {
		key := "tolerance." + name
		dtype := sdk.DType(name)
		if !dtype.Valid() {
			d.problem(key, -1, "unknown dtype %q: want fp16, bf16 or fp32", name)
			continue
		}
		out[dtype] = d.overTolerance(key, tables[name], out[dtype])
	}
	return out
}

// outputTolerances are the [tolerance.<op>.<output>.<dtype>] tables. Keys
// left out keep what the output would have had: the suite's tolerance of
// the dtype times the output's factor.
func (d *decoder) outputTolerances(tables map[string]map[string]map[string]fileTolerance, byDType map[sdk.DType]op.Tolerance) map[op.OutputKey]op.Tolerance {
	if len(tables) == 0 {
		return nil
	}
	out := map[op.OutputKey]op.Tolerance{}
	for _, opName := range sortedKeys(tables) {
		o, _ := ops.Lookup(opName) // only ops' names are decoded as such
		spec := o.Spec()
		for _, output := range sortedKeys(tables[opName]) {
			key := "tolerance." + opName + "." + output
			dtypes := sortedKeys(tables[opName][output])
			tensor, ok := spec.Output(output)
			if !ok {
				// Named with its first dtype: the key a table header sets.
				d.problem(strings.Join(append([]string{key}, dtypes[:min(len(dtypes), 1)]...), "."), -1,
					"op %s has no output %q: want %s", opName, output, outputNames(spec))
				continue
			}
			for _, name := range dtypes {
				dtype := sdk.DType(name)
				if !dtype.Valid() {
					d.problem(key+"."+name, -1, "unknown dtype %q: want fp16, bf16 or fp32", name)
					continue
				}
				t := d.overTolerance(key+"."+name, tables[opName][output][name], byDType[dtype].Times(tensor.ToleranceFactor))
				out[op.OutputKey{Op: opName, Output: output, DType: dtype}] = t
			}
		}
	}
	return out
}

// overTolerance is t with the keys f sets, each checked.
func (d *decoder) overTolerance(key string, f fileTolerance, t op.Tolerance) op.Tolerance {
	t.Atol = d.tolerance(key+".atol", f.Atol.Or(t.Atol))
	t.Rtol = d.tolerance(key+".rtol", f.Rtol.Or(t.Rtol))
	t.RelL2 = d.tolerance(key+".rel_l2", f.RelL2.Or(t.RelL2))
	return t
}

func outputNames(spec op.Spec) string {
	names := make([]string, len(spec.Outputs))
	for i, t := range spec.Outputs {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

func (d *decoder) tolerance(key string, v float64) float64 {
	if !(v >= 0) || math.IsInf(v, 0) {
		d.problem(key, -1, "must be a finite number at least 0, got %g", v)
	}
	return v
}

func (d *decoder) backends(entries []fileBackend) []BackendSelection {
	var out []BackendSelection
	seen := map[string]bool{}
	for i, f := range entries {
		b := BackendSelection{
			Name:     strings.TrimSpace(f.Name.Value),
			Line:     d.lines.Find("backends.name", i),
			Variants: f.Variants.Value,
			Path:     d.resolve(f.Path.Value),
			Tunables: map[string][]string{},
		}
		switch {
		case b.Name == "":
			d.problem("backends.name", i, "required: name the backend")
		case seen[b.Name]:
			d.problem("backends.name", i, "backend %q is listed twice; list its variants and tunables in one entry", b.Name)
		}
		seen[b.Name] = true
		switch {
		case f.Path.Set && f.Python.Set:
			d.problem("backends.python", i, "set path (a plugin binary) or python (a Python file), not both")
		case f.CUDA.Set && (f.Path.Set || f.Python.Set):
			d.problem("backends.cuda", i, "set one of path (a plugin binary), python (a Python file) and cuda (a CUDA-file spec)")
		default:
			b.Python = d.pythonFile(f.Python, i)
			b.CUDA = d.cudaFile(f.CUDA, i)
		}
		if f.Variants.Set && len(b.Variants) == 0 {
			d.problem("backends.variants", i, "must list at least one variant (leave it out for all)")
		}
		for _, name := range sortedKeys(f.Tunables) {
			values := f.Tunables[name]
			if len(values) == 0 {
				d.problem("backends.tunables."+name, i, "must list at least one value")
			}
			b.Tunables[name] = values
		}
		b.Tuned = d.tunedFile(f, b.Name, i)
		out = append(out, b)
	}
	return out
}

// tunedFile reads the tuned configurations entry i of [[backends]] names.
// Problems inside that file are reported against its own lines.
func (d *decoder) tunedFile(f fileBackend, name string, i int) *Tuned {
	if !f.Tuned.Set {
		return nil
	}
	const key = "backends.tuned"
	if len(f.Tunables) > 0 {
		d.problem(key, i, "set tunables (rows to run) or tuned (a file of tuned configurations), not both")
		return nil
	}
	if strings.TrimSpace(f.Tuned.Value) == "" {
		d.problem(key, i, "must not be empty: name the file flashcore tune wrote (--out)")
		return nil
	}
	path := d.resolve(f.Tuned.Value)
	t, err := LoadTuned(path)
	var suiteErr *Error
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.problem(key, i, "%s: no such file (paths are relative to the suite's folder)", path)
	case errors.As(err, &suiteErr):
		d.problems = append(d.problems, err)
	case err != nil:
		d.problem(key, i, "%v", err)
	case t.Backend != name:
		d.problem(key, i, "%s holds configurations for backend %q, not %q", path, t.Backend, name)
	default:
		return t
	}
	return nil
}

// pythonFile resolves the Python file of entry i of [[backends]] and checks
// that it is there, so a typo is reported against the suite's line, not as
// an unavailable backend later.
func (d *decoder) pythonFile(f field[string], i int) string {
	if !f.Set {
		return ""
	}
	const key = "backends.python"
	path := d.resolve(f.Value)
	info, err := os.Stat(path)
	switch {
	case strings.TrimSpace(f.Value) == "":
		d.problem(key, i, "must not be empty: name the .py file that defines attention(q, k, v, *, causal, scale)")
	case !strings.HasSuffix(f.Value, ".py"):
		d.problem(key, i, "%q is not a .py file", f.Value)
	case errors.Is(err, fs.ErrNotExist):
		d.problem(key, i, "%s: no such file (paths are relative to the suite's folder)", path)
	case err != nil:
		d.problem(key, i, "%v", err)
	case info.IsDir():
		d.problem(key, i, "%s is a folder, not a .py file", path)
	}
	return path
}

// cudaFile resolves the CUDA-file spec of entry i of [[backends]] and
// checks that it is there; its contents are checked by the command that
// runs it (the spec has its own file, lines and keys).
func (d *decoder) cudaFile(f field[string], i int) string {
	if !f.Set {
		return ""
	}
	const key = "backends.cuda"
	path := d.resolve(f.Value)
	info, err := os.Stat(path)
	switch {
	case strings.TrimSpace(f.Value) == "":
		d.problem(key, i, "must not be empty: name the .toml spec of the CUDA kernel (docs/cuda.md)")
	case !strings.HasSuffix(f.Value, ".toml"):
		d.problem(key, i, "%q is not a .toml spec; the spec names the .cu file (docs/cuda.md)", f.Value)
	case errors.Is(err, fs.ErrNotExist):
		d.problem(key, i, "%s: no such file (paths are relative to the suite's folder)", path)
	case err != nil:
		d.problem(key, i, "%v", err)
	case info.IsDir():
		d.problem(key, i, "%s is a folder, not a .toml spec", path)
	}
	return path
}

// atLeast checks an integer setting against its lower bound.
func (d *decoder) atLeast(key string, v, low int) {
	if v < low {
		d.problem(key, -1, "must be at least %d, got %d", low, v)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
