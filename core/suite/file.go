package suite

import (
	"fmt"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
)

// fileSuite is the TOML schema of a suite file (docs/suites.md). Every leaf
// is a field, so an absent key is told from a zero value and a wrong type is
// reported in plain words. The arrays of tables stay Primitive here and are
// decoded one entry at a time, so an error knows which entry it is in.
type fileSuite struct {
	Name        field[string]             `toml:"name"`
	Description field[string]             `toml:"description"`
	Seed        field[int64]              `toml:"seed"`
	Baseline    field[string]             `toml:"baseline"`
	Python      field[string]             `toml:"python"`
	PluginPath  field[[]string]           `toml:"plugin_path"`
	Measurement fileMeasurement           `toml:"measurement"`
	Check       fileCheck                 `toml:"check"`
	Tolerance   map[string]toml.Primitive `toml:"tolerance"`
	Gates       fileGates                 `toml:"gates"`
	Ablation    fileAblation              `toml:"ablation"`
	Backends    []toml.Primitive          `toml:"backends"`
	Sweeps      []toml.Primitive          `toml:"sweeps"`
	Cases       []toml.Primitive          `toml:"cases"`
}

type fileMeasurement struct {
	WarmupRuns    field[int]           `toml:"warmup_runs"`
	WarmupTime    field[time.Duration] `toml:"warmup_time"`
	MinSamples    field[int]           `toml:"min_samples"`
	MaxSamples    field[int]           `toml:"max_samples"`
	TargetNoise   field[float64]       `toml:"target_noise"`
	TimeCap       field[time.Duration] `toml:"time_cap"`
	CPUTimeCap    field[time.Duration] `toml:"cpu_time_cap"`
	CPUMinSamples field[int]           `toml:"cpu_min_samples"`
	CallSamples   field[int]           `toml:"call_samples"`
	Placements    field[int]           `toml:"placements"`
	L2            field[[]string]      `toml:"l2"`
	CallTimeout   field[time.Duration] `toml:"call_timeout"`
	StartTimeout  field[time.Duration] `toml:"start_timeout"`
}

type fileCheck struct {
	FullCheckMaxPairs field[int64] `toml:"full_check_max_pairs"`
	SampledRows       field[int]   `toml:"sampled_rows"`
	Repeat            field[int]   `toml:"repeat"`
}

// fileTolerance is one [tolerance.<dtype>] or
// [tolerance.<op>.<output>.<dtype>] table; keys left out keep the
// dtype's default (for an output, times the output's factor).
type fileTolerance struct {
	Atol  field[float64] `toml:"atol"`
	Rtol  field[float64] `toml:"rtol"`
	RelL2 field[float64] `toml:"rel_l2"`
}

// fileTolerances are the [tolerance] tables after decoding: those of a
// dtype (or of a name that is neither a dtype nor an op, reported when the
// suite is built), and those of an op's outputs, by op, output and dtype.
type fileTolerances struct {
	dtypes  map[string]fileTolerance
	outputs map[string]map[string]map[string]fileTolerance
}

type fileBackend struct {
	Name     field[string]   `toml:"name"`
	Variants field[[]string] `toml:"variants"`
	Path     field[string]   `toml:"path"`
	Python   field[string]   `toml:"python"`
	CUDA     field[string]   `toml:"cuda"`
	Tunables tunables        `toml:"tunables"`
	Tuned    field[string]   `toml:"tuned"`
}

// tunables is the [backends.tunables] table: tunable names, chosen by the
// backend, each with the list of values to run.
type tunables map[string][]string

// UnmarshalTOML decodes the table. A map of the TOML library's own would
// drop a plain value such as tunables = 3 without a word.
func (t *tunables) UnmarshalTOML(data any) error {
	table, ok := data.(map[string]any)
	if !ok {
		return wrongType("a table of tunable names and value lists", data)
	}
	*t = tunables{}
	for name, value := range table {
		values, err := listOf(value, "strings", asString)
		if err != nil {
			return fmt.Errorf("tunable %q: %w", name, err)
		}
		(*t)[name] = values
	}
	return nil
}

// fileOpEntry is one [[sweeps]] or [[cases]] entry: its op, and its keys
// as the TOML decoder read them. Step 2 has checked the type of every key
// the op knows (its axes, op and distribution); the op's axes say what the
// values must be (opentry.go).
type fileOpEntry struct {
	op     string
	values map[string]any
}

// Defaults of the keys that have one. Values are preset in the file structs
// before decoding (step 1), so decoding overwrites only what the file sets.
// The keys of an op entry take their defaults from the op's axes
// (op.Axis.Default) when its cases are built.
const (
	defaultSeed         = 1
	defaultBaseline     = "pytorch-sdpa"
	defaultPython       = "" // the bridge chooses: $FLASHCORE_PYTHON, the checkout's .venv, python3
	defaultCallTimeout  = 120 * time.Second
	defaultStartTimeout = 60 * time.Second
)

func defaultFile() fileSuite {
	m := sdk.DefaultMeasurement()
	c := op.DefaultCheckSettings()
	return fileSuite{
		Seed:     preset[int64](defaultSeed),
		Baseline: preset(defaultBaseline),
		Python:   preset(defaultPython),
		Measurement: fileMeasurement{
			WarmupRuns:   preset(m.WarmupRuns),
			WarmupTime:   preset(m.WarmupTime),
			MinSamples:   preset(m.MinSamples),
			MaxSamples:   preset(m.MaxSamples),
			TargetNoise:  preset(m.TargetNoise),
			TimeCap:      preset(m.TimeCap),
			CallSamples:  preset(m.CallSamples),
			Placements:   preset(m.Placements),
			L2:           preset([]string{string(m.L2)}),
			CallTimeout:  preset(defaultCallTimeout),
			StartTimeout: preset(defaultStartTimeout),
		},
		Check: fileCheck{
			FullCheckMaxPairs: preset(c.FullCheckMaxPairs),
			SampledRows:       preset(c.SampledRows),
			Repeat:            preset(c.Repeat),
		},
	}
}

// preset is a field holding a default: it has a value but was not set.
func preset[T any](v T) field[T] { return field[T]{Value: v} }
