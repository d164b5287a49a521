package suite

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/sdk"
	"github.com/flashcore/bench/suites"
)

// Suite is a validated suite: every default applied, every path resolved,
// every sweep expanded into Cases.
type Suite struct {
	Name        string
	Description string
	// Path is the file the suite was read from (or the name given to Parse).
	Path string
	// SHA256 is the hex SHA-256 of the file's bytes, recorded with results.
	SHA256 string
	// Seed keys the input generator (docs/inputs.md).
	Seed uint64
	// Baseline names the backend other rows are compared with.
	Baseline string
	// Python is the interpreter of the bridge backends.
	Python string
	// PluginPath lists extra places to look for plugins, resolved against
	// the suite file's directory.
	PluginPath []string
	// Measurement is the measurement contract; its L2 is L2Modes[0].
	Measurement sdk.Measurement
	// CPUTimeCap is the time cap of the rows of backends that run on a
	// CPU (measurement.cpu_time_cap), in place of Measurement.TimeCap;
	// 0 when the suite sets none, and the time cap holds for every row.
	CPUTimeCap time.Duration
	// CPUMinSamples is min_samples of the rows of backends that run on a
	// CPU (measurement.cpu_min_samples), in place of
	// Measurement.MinSamples; 0 when the suite sets none.
	CPUMinSamples int
	// L2Modes lists every L2 mode to measure, the primary one first.
	L2Modes []sdk.L2Mode
	// CallTimeout is the deadline of one plugin call.
	CallTimeout time.Duration
	// StartTimeout bounds a plugin's start: its handshake with the host.
	StartTimeout time.Duration
	Check        op.CheckSettings
	// Tolerances holds an entry for every dtype: op.DefaultTolerances
	// with the file's [tolerance.<dtype>] tables over them.
	Tolerances map[sdk.DType]op.Tolerance
	// OutputTolerances set the tolerance of single outputs of an op in one
	// dtype ([tolerance.<op>.<output>.<dtype>]), in place of Tolerances
	// and the output's factor (op.Spec.Tolerances).
	OutputTolerances map[op.OutputKey]op.Tolerance
	// Gates are the limits of `flashcore gate` ([gates]).
	Gates Gates
	// Ablation is the chain of `flashcore ablate` ([ablation]); empty when
	// the suite has none.
	Ablation Ablation
	// Backends is empty when the suite selects none: then every backend
	// found is used.
	Backends []BackendSelection
	Cases    []op.Case
	// Warnings are what the suite does that is legal but likely a slip,
	// such as a case defined twice; run prints them before it starts.
	Warnings []string
}

// BackendSelection is one [[backends]] entry.
type BackendSelection struct {
	Name string
	// Line is the line of the entry's name key (0 when unknown), so that a
	// problem found later, such as a backend no plugin provides, can name
	// the file, line and key like the problems Parse finds (UnknownBackend).
	Line int
	// Variants is empty for "every variant".
	Variants []string
	// Path is an explicit plugin binary, resolved against the suite's
	// directory; empty to search for the backend by name.
	Path string
	// Python is a backend written as one Python file (a .py file defining
	// attention(q, k, v, *, causal, scale)), resolved against the suite's
	// directory; empty for a plugin binary. The host runs it through the
	// python-file plugin (docs/adding-a-backend.md).
	Python string
	// CUDA is a backend written as one .cu file (or a prebuilt cubin): the
	// spec file, a .toml that names the kernel file and says how to launch
	// it, resolved against the suite's directory; empty for a plugin
	// binary. The host runs it through the cuda-file plugin (docs/cuda.md).
	CUDA string
	// Tunables maps a tunable's name to the values to run; each combination
	// is its own row.
	Tunables map[string][]string
	// Tuned holds the configurations `flashcore tune` found, one per case
	// (the tuned key); nil when the suite names none. Rows of its variant
	// run each case with that case's configuration.
	Tuned *Tuned
	// Configs, when set, are the tunable sets to run, each its own row,
	// instead of the product of Tunables. The tuner sets it; a suite file
	// cannot.
	Configs []map[string]string
}

// UnknownBackend is the error for entry i of the suite's [[backends]],
// which names a backend none of the found ones (listed in found) is.
func (s *Suite) UnknownBackend(i int, found []string) *Error {
	b := s.Backends[i]
	message := fmt.Sprintf("no backend %q was found", b.Name)
	if len(found) > 0 {
		message += " (found: " + strings.Join(found, ", ") + ")"
	}
	return &Error{Path: s.Path, Line: b.Line, Key: "backends.name", Message: message}
}

// Load reads and validates the suite file at path.
func Load(path string) (*Suite, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read suite: %w", err)
	}
	return Parse(path, data)
}

// Parse validates a suite held in data. The name stands for the file in
// error messages and in Path, and relative paths in the suite are resolved
// against its directory.
func Parse(name string, data []byte) (*Suite, error) {
	d := newDecoder(name, data)
	file, err := d.decode()
	if err != nil {
		return nil, err
	}
	s, err := d.build(file)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	s.SHA256 = hex.EncodeToString(sum[:])
	return s, nil
}

// DefaultName is the file name of the suite built into the binary.
const DefaultName = "default.toml"

// Embedded returns the suite that ships in the binary under that name
// (suites/<name>.toml, such as "serving"); ok is false when none does.
func Embedded(name string) (s *Suite, ok bool, err error) {
	file := name + ".toml"
	data, err := suites.FS.ReadFile(file)
	if err != nil || strings.ContainsAny(name, "/.") {
		return nil, false, nil
	}
	s, err = Parse("suites/"+file, data)
	return s, true, err
}

// EmbeddedNames lists the suites that ship in the binary, by name.
func EmbeddedNames() []string {
	entries, _ := suites.FS.ReadDir(".")
	var out []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".toml"); ok {
			out = append(out, name)
		}
	}
	return out
}

// Default returns the suite built into the binary (suites/default.toml).
func Default() *Suite {
	data, err := suites.FS.ReadFile(DefaultName)
	if err != nil {
		panic(fmt.Sprintf("embedded suite: %v", err))
	}
	s, err := Parse("suites/"+DefaultName, data)
	if err != nil {
		panic(fmt.Sprintf("embedded suite: %v", err))
	}
	return s
}
