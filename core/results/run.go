package results

import (
	"time"

	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/sdk"
)

// SchemaVersion is the version of the file layout written by this package.
// It changes when a field changes meaning or is removed, or when readers
// must know that a field is there; Load refuses files with a newer version
// rather than misread them, and reads every older one.
//
// Version 2 added the raw samples (Timing.Samples): a version 1 file loads
// with none, and compare judges its rows by their summaries instead.
// Version 3 added the GPU each row ran on (Result.Device), the slice of a
// sharded run (Run.Shard) and the files a merged run came from (Run.Parts);
// older files load without them.
// Version 4 added the placement blocks of the kernel samples
// (Samples.KernelBlocks); older files load with none, and compare tests
// their samples one by one.
// Version 5 added ops: each case names its op and parameters (Case.Op,
// Case.Params), and a case of another op than attention has no Shape;
// an older file loads with every case as attention.
const SchemaVersion = 5

// Run statuses. A file is saved while the run is going ("running"), and
// once more when it ends.
const (
	// RunRunning: the run is still going, or its process died without
	// saving again; the file holds the rows done so far.
	RunRunning = "running"
	// RunComplete: every planned row was run.
	RunComplete = "complete"
	// RunInterrupted: the run was stopped (e.g. Ctrl-C); the rows done
	// so far are valid.
	RunInterrupted = "interrupted"
	// RunFailed: the host itself stopped on an error (not a plugin's
	// failure, which is a row with status "error").
	RunFailed = "failed"
	// RunIncomplete: a merged run some of whose shards are missing or did
	// not complete; Parts says which.
	RunIncomplete = "incomplete"
)

// Run is one whole results file.
type Run struct {
	SchemaVersion int         `json:"schema_version"`
	Tool          Tool        `json:"tool"`
	StartedAt     time.Time   `json:"started_at"`
	FinishedAt    time.Time   `json:"finished_at,omitzero"` // zero while running
	Status        string      `json:"status"`               // one of the Run* constants
	Command       string      `json:"command"`              // the command line, as typed
	Environment   Environment `json:"environment"`
	Suite         Suite       `json:"suite"`
	Backends      []Backend   `json:"backends"`
	Cases         []Case      `json:"cases"`
	Results       []Result    `json:"results"`
	// Shard is the slice of the suite this run measured (flashcore run
	// --shard I/N); nil for a whole run.
	Shard *Shard `json:"shard,omitempty"`
	// Parts are the runs a merged file was made of (flashcore merge, or
	// the devices of flashcore run --devices); nil for a run of its own.
	Parts []Part `json:"parts,omitempty"`
	// PluginStopNs is the host's time of the plugins' stop at the run's
	// end, all at once (a process's exit tears down its CUDA context):
	// inside FinishedAt, as their start is inside StartedAt.
	PluginStopNs int64 `json:"plugin_stop_ns,omitempty"`
}

// Shard is one slice of a suite's (case, backend) pairs: Index in
// [0, Count).
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// Part is one run that went into a merged file.
type Part struct {
	// Source is the file it was read from, or "device N" for a device of
	// flashcore run --devices.
	Source     string    `json:"source"`
	Shard      *Shard    `json:"shard,omitempty"`
	Host       string    `json:"host,omitempty"`
	Status     string    `json:"status"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	Rows       int       `json:"rows"`
}

// Tool identifies the flashcore build that wrote the file.
type Tool struct {
	Version   string `json:"version"`
	GitCommit string `json:"git_commit,omitempty"`
}

// Environment is the machine the run measured on.
type Environment struct {
	Host      string `json:"host"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPU       string `json:"cpu,omitempty"` // model name
	Cores     int    `json:"cores"`
	GoVersion string `json:"go_version"`
	// GPUs are the distinct GPUs the backends reported, in backend order.
	GPUs   []sdk.Device `json:"gpus,omitempty"`
	Driver string       `json:"driver,omitempty"`
	CUDA   string       `json:"cuda,omitempty"`
	// Isolation is what the host enforced between plugins, and what it
	// could not on this machine, as the run's header said it.
	Isolation string `json:"isolation,omitempty"`
	// TimingAudit is what the timing audit did (flashcore run --audit):
	// how many rows ncu measured and how many it flagged, or why it could
	// not run. Empty when no row needed it.
	TimingAudit string `json:"timing_audit,omitempty"`
}

// Suite is the suite the run followed, with every default filled in, so
// the file alone says how each number was taken.
type Suite struct {
	Name     string `json:"name"`
	Path     string `json:"path,omitempty"`   // the suite file; empty for a built-in suite
	SHA256   string `json:"sha256,omitempty"` // of the suite file's bytes
	Seed     uint64 `json:"seed"`             // the input generator's seed
	Baseline string `json:"baseline"`         // backend name speedups are taken against
	// Measurement is the measurement contract the backends followed. Its
	// durations are integer nanoseconds; its L2 is the primary mode.
	Measurement sdk.Measurement `json:"measurement"`
	// CPUTimeCap is the time cap of the rows that ran on a CPU, where the
	// suite set one apart (measurement.cpu_time_cap); absent when the
	// measurement's time cap held for every row.
	CPUTimeCap time.Duration `json:"cpu_time_cap,omitempty"`
	// CPUMinSamples is min_samples of the rows that ran on a CPU, where
	// the suite set one apart (measurement.cpu_min_samples); absent when
	// the measurement's min_samples held for every row.
	CPUMinSamples int `json:"cpu_min_samples,omitempty"`
	// L2Modes are the L2 modes measured; the first is the primary one.
	L2Modes []sdk.L2Mode `json:"l2_modes"`
	// Tolerances are keyed by dtype ("fp16", "bf16", "fp32"): the suite's
	// table. An output with a factor or a suite override of its own was
	// held to another; each CheckResult records the one it applied.
	Tolerances map[string]Tolerance `json:"tolerances"`
	Check      Check                `json:"check"`
}

// Tolerance is how far an output may be from the fp64 reference. An element
// passes when |o-r| <= Atol + Rtol*|r|; the whole output must also have
// ||o-r||/||r|| <= RelL2.
type Tolerance struct {
	Atol  float64 `json:"atol"`
	Rtol  float64 `json:"rtol"`
	RelL2 float64 `json:"rel_l2"`
}

// Check is how much of each output the suite asked to check.
type Check struct {
	// FullCheckMaxPairs: cases with B*H*Sq*Sk at or below it have every
	// query row checked.
	FullCheckMaxPairs int64 `json:"full_check_max_pairs"`
	// SampledRows: larger cases have this many query rows checked.
	SampledRows int `json:"sampled_rows"`
}

// Backend is one plugin as it described itself at the start of the run.
type Backend struct {
	Name              string `json:"name"`
	Version           string `json:"version"`
	Build             string `json:"build,omitempty"`
	Path              string `json:"path,omitempty"` // the plugin binary
	Available         bool   `json:"available"`
	UnavailableReason string `json:"unavailable_reason,omitempty"`
	// Fault is set when the backend is unavailable because the plugin
	// misbehaved (it crashed at start, never completed the handshake, or
	// failed to describe itself), not because this machine lacks what it
	// needs (no GPU, no torch). A fault fails the run's exit code.
	Fault    bool          `json:"fault,omitempty"`
	Device   sdk.Device    `json:"device"`
	Variants []sdk.Variant `json:"variants,omitempty"`
	// CPUOutsideRowsMs is the CPU time the plugin used while other
	// backends' rows were measured, from its cgroup; absent where the
	// host could not read it.
	CPUOutsideRowsMs *float64 `json:"cpu_outside_rows_ms,omitempty"`
	// StartNs is the host's time of the plugin's start and Describe at
	// the run's beginning, where every plugin starts at once; absent in
	// files written before it was recorded.
	StartNs int64 `json:"start_ns,omitempty"`
	// StopNs is the host's time of the plugin's stop at the run's end
	// (Run.PluginStopNs); absent where it was not running then.
	StopNs int64 `json:"stop_ns,omitempty"`
}

// Case is one problem of the suite, with the inputs every backend was
// given.
type Case struct {
	ID string `json:"id"`
	// Op names the case's op and Params are its axis values (schema 5).
	// A file of schema 4 or earlier has neither; Load fills them in from
	// Shape, as every case then was attention.
	Op     string            `json:"op,omitempty"`
	Params map[string]string `json:"params,omitempty"`
	// Shape is the case of an attention op; zero, and absent from the
	// file, for other ops.
	Shape        sdk.Shape `json:"shape,omitzero"`
	Distribution string    `json:"distribution"`
	// InputSHA256 is the hex SHA-256 of the inputs concatenated in the
	// op's order (for attention Q, K and V).
	InputSHA256 string `json:"input_sha256"`
	// FLOPs and Bytes are the work of one call (ops.Op.Work): for
	// attention 4·B·H·D times the number of (query, key) pairs that are
	// not masked, and Q, K, V read and O written once.
	FLOPs float64 `json:"flops"`
	Bytes float64 `json:"bytes"`
	// InputsNs is the host's time generating and hashing the case's
	// inputs, once for all its rows; absent when no row ran, and in
	// files written before it was recorded.
	InputsNs int64 `json:"inputs_ns,omitempty"`
	// FullReference is the harness's fp32 reference of every row, for a
	// case whose fp64 check samples rows, or why it has none; absent when
	// the run did not ask for one (docs/correctness.md).
	FullReference *FullReference `json:"full_reference,omitempty"`
}

// FullReference is what the harness's fp32 reference of a case was.
type FullReference struct {
	// Device is what it ran on, Torch the PyTorch that ran it.
	Device string `json:"device,omitempty"`
	Torch  string `json:"torch,omitempty"`
	// Ns is the host's time on it for the case: the process's start (on
	// the first case that needs it), the inputs' files, the computation,
	// the output's reading and the calibration.
	Ns int64 `json:"ns,omitempty"`
	// Calibration is its largest |fp32 − fp64| over the rows it was held to.
	Calibration float64 `json:"calibration,omitempty"`
	// Skip says why the case's rows were not checked against it: no GPU,
	// too little memory, or a calibration out of bounds.
	Skip string `json:"skip,omitempty"`
}

// OpName is the case's op: attention for a case built without one, as
// every case was before ops.
func (c Case) OpName() string {
	if c.Op == "" {
		return attention.Name
	}
	return c.Op
}
