package suite

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// validSweep is a minimal sweep the error cases build on.
const validSweep = `
[[sweeps]]
batch = [1]
heads = [8]
seq_q = [512]
head_dim = [64]
`

// errorCases are suites with one mistake each. Key is the dotted key the
// error must name and line the line it must point at (0: no line).
var errorCases = []struct {
	name string
	doc  string
	key  string
	line int
}{
	{"unknown top-level key", "name = \"x\"\nsed = 3\n" + validSweep, "sed", 2},
	{"unknown nested key", "name = \"x\"\n[measurement]\nwarmup_tme = \"1s\"\n" + validSweep, "measurement.warmup_tme", 3},
	{"key in the wrong case", "name = \"x\"\n[measurement]\nWarmup_Runs = 3\n" + validSweep, "measurement.Warmup_Runs", 3},
	{"unknown table", "name = \"x\"\n[checks]\nfull = 1\n" + validSweep, "checks", 2},
	{"unknown key in second sweep", "name = \"x\"\n" + validSweep + validSweep + "bach = [2]\n", "sweeps.bach", 14},
	{"wrong type", "name = \"x\"\n[measurement]\nmin_samples = \"20\"\n" + validSweep, "measurement.min_samples", 3},
	{"wrong type in list", "name = \"x\"\n" + validSweep + "causal = [\"yes\"]\n", "sweeps.causal", 8},
	{"scalar where a sweep wants a list", "name = \"x\"\n" + strings.Replace(validSweep, "batch = [1]", "batch = 1", 1), "sweeps.batch", 4},
	{"table where an array of tables is wanted", "name = \"x\"\n[sweeps]\nbatch = [1]\n", "sweeps", 2},
	{"bad dtype in sweep", "name = \"x\"\n" + validSweep + "dtype = [\"fp16\", \"fp8\"]\n", "sweeps.dtype", 8},
	{"bad dtype in case", "name = \"x\"\n[[cases]]\nbatch = 1\nheads = 8\nseq_q = 64\nhead_dim = 64\ndtype = \"int8\"\n", "cases.dtype", 7},
	{"bad tolerance dtype", "name = \"x\"\n[tolerance.fp8]\natol = 1e-3\n" + validSweep, "tolerance.fp8", 2},
	{"unknown output in a tolerance", "name = \"x\"\n[tolerance.rmsnorm.out.fp16]\natol = 1e-3\n" + validSweep, "tolerance.rmsnorm.out.fp16", 2},
	{"bad dtype in an output's tolerance", "name = \"x\"\n[tolerance.rmsnorm.y.fp8]\natol = 1e-3\n" + validSweep, "tolerance.rmsnorm.y.fp8", 2},
	{"negative output tolerance", "name = \"x\"\n[tolerance.attention.o.bf16]\nrel_l2 = -1\n" + validSweep, "tolerance.attention.o.bf16.rel_l2", 3},
	{"unknown key in an output's tolerance", "name = \"x\"\n[tolerance.rmsnorm.y.fp16]\natl = 1e-3\n" + validSweep, "tolerance.rmsnorm.y.fp16.atl", 3},
	{"kv_heads not dividing heads", "name = \"x\"\n" + validSweep + "kv_heads = [3]\n", "sweeps.kv_heads", 8},
	{"kv_heads not dividing heads in second case", "name = \"x\"\n" +
		"[[cases]]\nbatch = 1\nheads = 8\nkv_heads = 2\nseq_q = 64\nhead_dim = 64\n" +
		"[[cases]]\nbatch = 1\nheads = 8\nkv_heads = 5\nseq_q = 64\nhead_dim = 64\n", "cases.kv_heads", 11},
	{"negative size", "name = \"x\"\n" + strings.Replace(validSweep, "seq_q = [512]", "seq_q = [512, -1]", 1), "sweeps.seq_q", 6},
	{"zero size in case", "name = \"x\"\n[[cases]]\nbatch = 0\nheads = 8\nseq_q = 64\nhead_dim = 64\n", "cases.batch", 3},
	{"missing required size", "name = \"x\"\n[[cases]]\nbatch = 1\nheads = 8\nhead_dim = 64\n", "cases.seq_q", 2},
	{"bad duration", "name = \"x\"\n[measurement]\ntime_cap = \"2 seconds\"\n" + validSweep, "measurement.time_cap", 3},
	{"duration without unit", "name = \"x\"\n[measurement]\nwarmup_time = 50\n" + validSweep, "measurement.warmup_time", 3},
	{"negative duration", "name = \"x\"\n[measurement]\ntime_cap = \"-1s\"\n" + validSweep, "measurement.time_cap", 3},
	{"zero cpu time cap", "name = \"x\"\n[measurement]\ncpu_time_cap = \"0s\"\n" + validSweep, "measurement.cpu_time_cap", 3},
	{"zero cpu min samples", "name = \"x\"\n[measurement]\ncpu_min_samples = 0\n" + validSweep, "measurement.cpu_min_samples", 3},
	{"cpu min samples above max", "name = \"x\"\n[measurement]\nmax_samples = 30\ncpu_min_samples = 40\n" + validSweep, "measurement.cpu_min_samples", 4},
	{"cpu min samples not a number", "name = \"x\"\n[measurement]\ncpu_min_samples = \"6\"\n" + validSweep, "measurement.cpu_min_samples", 3},
	{"bad l2 mode", "name = \"x\"\n[measurement]\nl2 = [\"hot\", \"warm\"]\n" + validSweep, "measurement.l2", 3},
	{"max below min samples", "name = \"x\"\n[measurement]\nmin_samples = 50\nmax_samples = 10\n" + validSweep, "measurement.max_samples", 4},
	{"no placements", "name = \"x\"\n[measurement]\nplacements = 0\n" + validSweep, "measurement.placements", 3},
	{"more placements than samples", "name = \"x\"\n[measurement]\nmin_samples = 4\nplacements = 6\n" + validSweep, "measurement.placements", 4},
	{"empty case list", "name = \"x\"\n", "", 0},
	{"empty sweep axis", "name = \"x\"\n" + strings.Replace(validSweep, "heads = [8]", "heads = []", 1), "sweeps.heads", 5},
	{"missing name", validSweep, "name", 0},
	{"negative seed", "name = \"x\"\nseed = -1\n" + validSweep, "seed", 2},
	{"duplicate backend", "name = \"x\"\n[[backends]]\nname = \"triton\"\n[[backends]]\nname = \"triton\"\n" + validSweep, "backends.name", 5},
	{"empty tunable", "name = \"x\"\n[[backends]]\nname = \"cuda-v8\"\n[backends.tunables]\ntile_n = []\n" + validSweep, "backends.tunables.tile_n", 5},
	{"plain value for the tolerance table", "name = \"x\"\ntolerance = 3\n" + validSweep, "tolerance", 2},
	{"tunable values not strings", "name = \"x\"\n[[backends]]\nname = \"cuda-v8\"\ntunables = { tile_n = [32] }\n" + validSweep, "backends.tunables", 4},
	{"python file missing", "name = \"x\"\n[[backends]]\nname = \"my-fa\"\npython = \"kernels/nope.py\"\n" + validSweep, "backends.python", 4},
	{"python file not .py", "name = \"x\"\n[[backends]]\nname = \"my-fa\"\npython = \"kernels/my_fa.pyc\"\n" + validSweep, "backends.python", 4},
	{"python file empty", "name = \"x\"\n[[backends]]\nname = \"my-fa\"\npython = \"\"\n" + validSweep, "backends.python", 4},
	{"python file and plugin path", "name = \"x\"\n[[backends]]\nname = \"my-fa\"\npath = \"bin\"\npython = \"kernels/nope.py\"\n" + validSweep, "backends.python", 5},
	{"python file without a name", "name = \"x\"\n[[backends]]\npython = \"kernels/nope.py\"\n" + validSweep, "backends.name", 2},
	{"python backend listed twice", "name = \"x\"\n[[backends]]\nname = \"my-fa\"\n[[backends]]\nname = \"my-fa\"\npython = \"my_fa.py\"\n" + validSweep, "backends.name", 5},
	{"cuda spec missing", "name = \"x\"\n[[backends]]\nname = \"splitkv\"\ncuda = \"kernels/nope.toml\"\n" + validSweep, "backends.cuda", 4},
	{"cuda spec not .toml", "name = \"x\"\n[[backends]]\nname = \"splitkv\"\ncuda = \"kernels/splitkv.cu\"\n" + validSweep, "backends.cuda", 4},
	{"cuda spec and python file", "name = \"x\"\n[[backends]]\nname = \"splitkv\"\npython = \"k.py\"\ncuda = \"k.toml\"\n" + validSweep, "backends.cuda", 5},
	{"unknown key in a python backend", "name = \"x\"\n[[backends]]\nname = \"my-fa\"\nfile = \"kernels/my_fa.py\"\n" + validSweep, "backends.file", 4},
	{"unknown gate", "name = \"x\"\n[gates]\nruns = 3\nmax_regs = 128\n" + validSweep, "gates.max_regs", 4},
	{"gate runs zero", "name = \"x\"\n[gates]\nruns = 0\n" + validSweep, "gates.runs", 3},
	{"occupancy as a percentage", "name = \"x\"\n[gates]\nmin_occupancy = 25\n" + validSweep, "gates.min_occupancy", 3},
	{"negative register limit", "name = \"x\"\n[gates]\nmax_registers = -1\n" + validSweep, "gates.max_registers", 3},
	{"ablation of one step", "name = \"x\"\n[ablation]\nchain = [\"cuda-v8\"]\n" + validSweep, "ablation.chain", 3},
	{"ablation step without variant", "name = \"x\"\n[ablation]\nchain = [\"cuda-v8\", \"pytorch-sdpa:\"]\n" + validSweep, "ablation.chain", 3},
	{"unknown ablation key", "name = \"x\"\n[ablation]\nsteps = [\"a\", \"b\"]\n" + validSweep, "ablation.steps", 3},
	{"tuned file missing", "name = \"x\"\n[[backends]]\nname = \"cpu-reference\"\ntuned = \"nope.toml\"\n" + validSweep, "backends.tuned", 4},
	{"tuned and tunables", "name = \"x\"\n[[backends]]\nname = \"cpu-reference\"\ntuned = \"../testdata/tuned-cpu.toml\"\n[backends.tunables]\nworkers = [\"1\"]\n" + validSweep, "backends.tuned", 4},
	{"tuned file of another backend", "name = \"x\"\n[[backends]]\nname = \"cuda-v8\"\ntuned = \"../testdata/tuned-cpu.toml\"\n" + validSweep, "backends.tuned", 4},
	{"syntax error", "name = \"x\"\nseed = = 3\n", "", 2},
	// The TOML library counts the line of an error at a line's end as the
	// next one; the error is where the table's name is left open.
	{"syntax error at the end of a line", "name = \"x\"\n[[cases]\nbatch = 1\n", "", 2},
	{"value missing at the end of a line", "name = \"x\"\nseed =\n", "", 2},
	{"unknown op", "name = \"x\"\n[[sweeps]]\nop = \"layernorm\"\nrows = [1]\n", "sweeps.op", 3},
	{"attention key in an rmsnorm sweep", "name = \"x\"\n[[sweeps]]\nop = \"rmsnorm\"\nrows = [1]\ncols = [64]\nhead_dim = [64]\n", "sweeps.head_dim", 6},
	{"rmsnorm axis missing", "name = \"x\"\n[[sweeps]]\nop = \"rmsnorm\"\nrows = [1]\n", "sweeps.cols", 2},
	{"rmsnorm axis not a list", "name = \"x\"\n[[sweeps]]\nop = \"rmsnorm\"\nrows = 1\ncols = [64]\n", "sweeps.rows", 4},
	{"rmsnorm size not positive", "name = \"x\"\n[[cases]]\nop = \"rmsnorm\"\nrows = 0\ncols = 64\n", "cases.rows", 4},
	{"rmsnorm unknown dtype", "name = \"x\"\n[[cases]]\nop = \"rmsnorm\"\nrows = 2\ncols = 64\ndtype = \"fp8\"\n", "cases.dtype", 6},
	{"rmsnorm tensor too large", "name = \"x\"\n[[cases]]\nop = \"rmsnorm\"\nrows = 65536\ncols = 65536\n", "cases", 2},
	{"attention key kv_heads that does not divide", "name = \"x\"\n[[cases]]\nop = \"attention\"\nbatch = 1\nheads = 8\nkv_heads = 3\nseq_q = 4\nhead_dim = 16\n", "cases.kv_heads", 6},
	{"window in the backward", "name = \"x\"\n[[cases]]\nbatch = 1\nheads = 8\nseq_q = 64\nhead_dim = 64\nmode = \"bwd\"\nwindow_left = 32\n", "cases.window_left", 8},
	{"bottom-right in fwd+bwd", "name = \"x\"\n" + validSweep + "causal = [true]\nmode = [\"fwd\", \"fwd+bwd\"]\ncausal_align = [\"bottom-right\"]\n", "sweeps.causal_align", 10},
	{"unknown alignment", "name = \"x\"\n" + validSweep + "causal_align = [\"bottom\"]\n", "sweeps.causal_align", 8},
	{"negative softcap", "name = \"x\"\n" + validSweep + "softcap = [-1]\n", "sweeps.softcap", 8},
}

func TestErrors(t *testing.T) {
	var golden strings.Builder
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("suites/bad.toml", []byte(tc.doc))
			if err == nil {
				t.Fatalf("Parse accepted:\n%s", tc.doc)
			}
			first := firstError(t, err)
			if first.Key != tc.key || first.Line != tc.line {
				t.Errorf("error at line %d key %q, want line %d key %q: %v", first.Line, first.Key, tc.line, tc.key, err)
			}
			if !strings.HasPrefix(err.Error(), "suites/bad.toml") {
				t.Errorf("error does not name the file: %v", err)
			}
			fmt.Fprintf(&golden, "== %s\n%v\n\n", tc.name, err)
		})
	}
	checkGolden(t, "errors.golden", golden.String())
}

// tunedErrorCases are tuned-configuration files with one mistake each.
var tunedErrorCases = []struct {
	name string
	doc  string
	key  string
	line int
}{
	{"unknown key in a case", "backend = \"b\"\nvariant = \"v\"\n[[cases]]\nid = \"c\"\nkernel_nanos = 3\n[cases.tunables]\nx = \"1\"\n", "cases.kernel_nanos", 5},
	{"missing backend", "variant = \"v\"\n[[cases]]\nid = \"c\"\n[cases.tunables]\nx = \"1\"\n", "backend", 0},
	{"case without tunables", "backend = \"b\"\nvariant = \"v\"\n[[cases]]\nid = \"c\"\n", "cases.tunables", 3},
	{"case listed twice", "backend = \"b\"\nvariant = \"v\"\n[[cases]]\nid = \"c\"\ntunables = { x = \"1\" }\n[[cases]]\nid = \"c\"\ntunables = { x = \"2\" }\n", "cases.id", 7},
	{"tunable value not a string", "backend = \"b\"\nvariant = \"v\"\n[[cases]]\nid = \"c\"\ntunables = { x = 1 }\n", "cases.tunables.x", 5},
}

func TestTunedErrors(t *testing.T) {
	var golden strings.Builder
	for _, tc := range tunedErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTuned("best.toml", []byte(tc.doc))
			if err == nil {
				t.Fatalf("ParseTuned accepted:\n%s", tc.doc)
			}
			first := firstError(t, err)
			if first.Key != tc.key || first.Line != tc.line {
				t.Errorf("error at line %d key %q, want line %d key %q: %v", first.Line, first.Key, tc.line, tc.key, err)
			}
			fmt.Fprintf(&golden, "== %s\n%v\n\n", tc.name, err)
		})
	}
	checkGolden(t, "tuned-errors.golden", golden.String())
}

// A mistake inside the tuned file a suite names is reported against that
// file's line, not the suite's.
func TestSuiteReportsTheTunedFilesOwnLine(t *testing.T) {
	doc := "name = \"x\"\n[[backends]]\nname = \"cpu-reference\"\ntuned = \"../testdata/tuned-bad.toml\"\n" + validSweep
	_, err := Parse("suites/bad.toml", []byte(doc))
	want := `testdata/tuned-bad.toml:6: key "cases.kernel_nanos": unknown key`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

// A tuned file round-trips: what Encode writes, ParseTuned reads back.
func TestTunedRoundTrip(t *testing.T) {
	in := &Tuned{Backend: "cpu-reference", Variant: "cpu-reference", Cases: []TunedCase{
		{ID: "b1-h2-s128-d64-fp16", Tunables: map[string]string{"workers": "2", "key_block_rows": "128"}, KernelNs: 2160273, DefaultKernelNs: 2379279, Evaluations: 12},
		{ID: "b1-h8-s512-d64-fp16", Tunables: map[string]string{"workers": "auto"}},
	}}
	data, err := in.Encode()
	if err != nil {
		t.Fatal(err)
	}
	out, err := ParseTuned("best.toml", data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	out.Path = ""
	if fmt.Sprint(out) != fmt.Sprint(in) {
		t.Errorf("read back %+v, wrote %+v\n%s", out, in, data)
	}
	if got := out.For("b1-h8-s512-d64-fp16")["workers"]; got != "auto" {
		t.Errorf("For: workers = %q, want auto", got)
	}
	if out.For("b1-h1-s1-d64-fp16") != nil {
		t.Error("For: a case the file does not list has tunables")
	}
	checkGolden(t, "tuned.golden.toml", string(data))
}

// firstError returns the first *Error of err, which may be joined.
func firstError(t *testing.T, err error) *Error {
	t.Helper()
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		err = joined.Unwrap()[0]
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T is not a *suite.Error: %v", err, err)
	}
	return e
}

// TestErrorsReportEveryProblem shows validation does not stop at the first
// problem.
func TestErrorsReportEveryProblem(t *testing.T) {
	doc := "name = \"x\"\n[check]\nsampled_rows = 1\n" + validSweep + "kv_heads = [3]\ndtype = [\"fp8\"]\n"
	_, err := Parse("bad.toml", []byte(doc))
	want := []string{
		`bad.toml:3: key "check.sampled_rows": must be at least 2, got 1`,
		`bad.toml:11: key "sweeps.dtype": unknown dtype "fp8": want fp16, bf16 or fp32`,
		`bad.toml:10: key "sweeps.kv_heads": 3 does not divide heads = 8`,
	}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
}

// An entry's unknown keys and its values of the wrong type come out
// together, in file order, however the file orders them.
func TestOpEntryKeyProblemsTogether(t *testing.T) {
	doc := "name = \"x\"\n[[cases]]\nbatch = 1\nheads = 8\nseq_q = 64\nhead_dm = 64\nhead_dim = 64\ncausal = \"yes\"\n" +
		"[[sweeps]]\nbatch = [1]\nheads = 2\nseq_q = [64]\nhead_dim = [64]\nwarmup = [1]\n"
	_, err := Parse("bad.toml", []byte(doc))
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		`bad.toml:6: key "cases.head_dm": unknown key`,
		`bad.toml:8: key "cases.causal": want a boolean`,
		`bad.toml:11: key "sweeps.heads": want`,
		`bad.toml:14: key "sweeps.warmup": unknown key`,
	}
	text := err.Error()
	at := 0
	for _, w := range want {
		i := strings.Index(text[at:], w)
		if i < 0 {
			t.Fatalf("error lacks %q after position %d, or has it out of order:\n%s", w, at, text)
		}
		at += i + len(w)
	}
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		gotPath := path + ".got"
		_ = os.WriteFile(gotPath, []byte(got), 0o644)
		t.Errorf("%s differs from the output; see %s (go test -update rewrites it)", path, gotPath)
	}
}
