package ncu

import (
	"errors"
	"flag"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/NAME.golden; on a mismatch it writes
// NAME.got beside it so the difference can be inspected.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
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
	if got != string(want) {
		os.WriteFile(strings.TrimSuffix(path, ".golden")+".got", []byte(got), 0o644)
		t.Errorf("%s differs from %s (wrote .got):\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

func parseFile(t *testing.T, name string) []Kernel {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kernels, err := ParseRaw(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return kernels
}

func TestParseRaw(t *testing.T) {
	tests := []struct {
		file    string
		kernels int
		first   string
		metric  string
		value   float64 // in base units
	}{
		{"profile-cuda-v8.csv", 1, "attn_fwd_fp16_d64_n32_s2", TimeMetric, 28930},
		{"profile-cuda-v8.csv", 1, "attn_fwd_fp16_d64_n32_s2", "launch__shared_mem_per_block_dynamic", 36480},
		{"profile-cuda-v8.csv", 1, "attn_fwd_fp16_d64_n32_s2", "dram__bytes_read.sum", 1.57e6},
		{"profile-sdpa.csv", 2, "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char *, 1>>(int, T2, T3)", "launch__grid_size", 32},
		{"timing-cuda-v8.csv", 5, "attn_fwd_fp16_d128_n32_s2", TimeMetric, 1.8e6},
		{"timing-bridges-renamed.csv", 10, "flashcore call b1-h8-s512-d64-fp16 sdpa #1", TimeMetric, 1950},
	}
	for _, tt := range tests {
		t.Run(tt.file+"/"+tt.metric, func(t *testing.T) {
			kernels := parseFile(t, tt.file)
			if len(kernels) != tt.kernels {
				t.Fatalf("%d kernels, want %d", len(kernels), tt.kernels)
			}
			if kernels[0].Name != tt.first || kernels[0].ID != 0 {
				t.Errorf("first kernel %d %q, want 0 %q", kernels[0].ID, kernels[0].Name, tt.first)
			}
			got, ok := kernels[0].Value(tt.metric)
			if !ok || math.Abs(got-tt.value) > 1e-9*tt.value {
				t.Errorf("%s = %v (%v), want %v", tt.metric, got, ok, tt.value)
			}
		})
	}
}

func TestParseRawRejectsWhatIsNotARawPage(t *testing.T) {
	header := `"ID","Process ID","Process Name","Host Name","Kernel Name","gpu__time_duration.sum"` + "\n"
	units := `"","","","","","usecond"` + "\n"
	tests := []struct {
		name, input, want string
	}{
		{"no header", "==PROF== Disconnected\n", `ncu CSV: no header row ("ID","Process ID",…); was the report printed with --csv --page raw?`},
		{"details page", `"ID","Process ID","Process Name","Host Name","Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"` + "\n" +
			`"0","1","p","h","k","GPU Speed Of Light Throughput","Duration","usecond","7.97"` + "\n",
			"ncu CSV line 2: want a row of units after the header (raw page, --page raw)"},
		{"short row", "==PROF== x\n" + header + units + `"0","1","p","h","k"` + "\n", "ncu CSV line 4: wrong number of fields"},
		{"bad ID", header + units + `"x","1","p","h","k","7.97"` + "\n", `ncu CSV line 3: ID "x" is not a number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRaw(strings.NewReader(tt.input))
			if err == nil || err.Error() != tt.want {
				t.Errorf("error %v\nwant       %s", err, tt.want)
			}
		})
	}
}

func TestMetricValue(t *testing.T) {
	tests := []struct {
		unit, text string
		want       float64
		ok         bool
	}{
		{"nsecond", "8,416", 8416, true},
		{"usecond", "7.97", 7970, true},
		{"us", "29.15", 29150, true}, // ncu 2025 prints the short names
		{"ns", "812", 812, true},
		{"ms", "1.5", 1.5e6, true},
		{"KB", "35.6", 35600, true},
		{"msecond", "1.80", 1.8e6, true},
		{"second", "0.5", 0.5e9, true},
		{"Kbyte/block", "36.48", 36480, true},
		{"byte/block", "0", 0, true},
		{"Gbyte/second", "2.5", 2.5e9, true},
		{"cycle/usecond", "1,830", 1.83e9, true},
		{"%", "12.44", 12.44, true},
		{"register/thread", "96", 96, true},
		{"", "n/a", 0, false},
		{"", "cudaFuncCachePreferNone", 0, false},
	}
	for _, tt := range tests {
		got, ok := Metric{Unit: tt.unit, Text: tt.text}.Value()
		if ok != tt.ok || math.Abs(got-tt.want) > 1e-6*math.Abs(tt.want) {
			t.Errorf("%q %s = %v, %v; want %v, %v", tt.text, tt.unit, got, ok, tt.want, tt.ok)
		}
	}
}

func TestCallRangeRoundTrip(t *testing.T) {
	rows := []RowKey{
		{"b1-h8-s512-d64-fp16", "sdpa"},
		{"b2-h4-2-s77x131-d128-bf16-causal", "triton[BLOCK_M=64,warps=4]"},
	}
	for _, row := range rows {
		got, n, ok := parseCallRange(CallRange(row, 17))
		if !ok || got != row || n != 17 {
			t.Errorf("parseCallRange(CallRange(%v, 17)) = %v, %d, %v", row, got, n, ok)
		}
	}
	// As ncu prints renamed kernels: the range and the kernel's name after
	// a "/" (seen on an H100 with ncu 2025), or the outer range first.
	sdpa := RowKey{"b1-h8-s512-d64-fp16", "sdpa-math"}
	for _, name := range []string{
		"flashcore call b1-h8-s512-d64-fp16 sdpa-math #3/void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase &)::[lambda() (instance 3)]>(int, T1)",
		"flashcore/flashcore call b1-h8-s512-d64-fp16 sdpa-math #3/softmax_warp_forward",
	} {
		if got, n, ok := parseCallRange(name); !ok || got != sdpa || n != 3 {
			t.Errorf("parseCallRange(%q) = %v, %d, %v", name, got, n, ok)
		}
	}
	for _, name := range []string{"attn_fwd_fp16_d64", "flashcore", "flashcore call x", "flashcore call c l #0", "flashcore call c l #x"} {
		if _, _, ok := parseCallRange(name); ok {
			t.Errorf("parseCallRange(%q) accepted it", name)
		}
	}
}

func TestCallsByRangeGroupsEachCallsKernels(t *testing.T) {
	calls, err := CallsByRange(parseFile(t, "timing-bridges.csv"), parseFile(t, "timing-bridges-renamed.csv"))
	if err != nil {
		t.Fatal(err)
	}
	sdpa := RowKey{"b1-h8-s512-d64-fp16", "sdpa"}
	flash := RowKey{"b1-h8-s512-d64-fp16", "sdpa-flash"}
	tests := []struct {
		row     RowKey
		kernels []int
		ns      []float64
	}{
		{sdpa, []int{2, 2, 2}, []float64{9920, 9950, 9920}},
		{flash, []int{1, 1, 1}, []float64{10120, 10070, 10190}},
	}
	for _, tt := range tests {
		got := CallsOf(calls, tt.row)
		if len(got) != len(tt.kernels) {
			t.Fatalf("%v: %d calls, want %d", tt.row, len(got), len(tt.kernels))
		}
		for i, c := range got {
			d, _ := c.DurationNs()
			if len(c.Kernels) != tt.kernels[i] || math.Abs(d-tt.ns[i]) > 1e-6 || c.N != i+1 {
				t.Errorf("%v call %d: #%d, %d kernels, %v ns; want %d kernels, %v ns", tt.row, i, c.N, len(c.Kernels), d, tt.kernels[i], tt.ns[i])
			}
		}
	}
	if len(calls) != 6 {
		t.Errorf("%d calls, want 6: the kernel outside every range must be left out", len(calls))
	}
}

func TestCallsByRangeNeedsEveryKernelRenamed(t *testing.T) {
	kernels := parseFile(t, "timing-bridges.csv")
	_, err := CallsByRange(kernels, parseFile(t, "timing-bridges-renamed.csv")[:3])
	if err == nil || !strings.Contains(err.Error(), "kernel ID 3") {
		t.Errorf("error %v, want one naming kernel ID 3", err)
	}
}

func TestAgree(t *testing.T) {
	tests := []struct {
		ours, ncu float64
		want      bool
	}{
		{1803.8e3, 1790.9e3, true}, // +0.7%: cuda-v8, FACTS.md
		{1830e3, 1790e3, false},    // +2.2%
		{1754.2e3, 1790e3, true},   // −2.0% exactly at the bound
		{8.4e3, 7.97e3, true},      // 0.43 µs: under the 0.5 µs floor
		{9.57e3, 7.3e3, false},     // the seed's SDPA Kernel column against CUPTI
		{100e3, 0, false},          // no ncu figure
	}
	for _, tt := range tests {
		if got := Agree(tt.ours, tt.ncu); got != tt.want {
			t.Errorf("Agree(%v, %v) = %v, want %v", tt.ours, tt.ncu, got, tt.want)
		}
	}
}

func TestCompareCallsWithoutCallsIsAnError(t *testing.T) {
	r := CompareCalls("pytorch-sdpa", RowKey{"c", "sdpa"}, 9e3, nil)
	if r.Verdict != Error || r.Reason != "ncu profiled no call of this row" {
		t.Errorf("got %s %q", r.Verdict, r.Reason)
	}
}

func TestFindWithoutNcuOnPath(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := Find(); !errors.Is(err, ErrNotFound) {
		t.Errorf("Find() = %v, want ErrNotFound", err)
	}
}

// TestPermissionMessage runs the stub ncu as a wrapper the way a session
// does, then reads its log: the stub stands in for ncu only to print
// ERR_NVGPUCTRPERM, since the message is what is under test.
func TestPermissionMessage(t *testing.T) {
	stub, err := filepath.Abs(filepath.Join("testdata", "stub-ncu", "ncu"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "ncu.log")
	argv := Tool{Path: stub}.Profiling(Reach{Process: PluginProcess, KernelRegex: AttentionKernels}, TimingMeasure("hot"),
		Limit{}, filepath.Join(dir, "report"), log)
	_ = exec.Command(argv[0], append(argv[1:], "true")...).Run()
	err = CheckLog(log)
	if !errors.Is(err, ErrNoPermission) {
		t.Fatalf("CheckLog = %v, want ErrNoPermission", err)
	}
	golden(t, "permission-message", err.Error()+"\n")
}

func TestCheckLogWithoutLog(t *testing.T) {
	err := CheckLog(filepath.Join(t.TempDir(), "ncu.log"))
	if err == nil || !strings.Contains(err.Error(), "did not start") {
		t.Errorf("CheckLog = %v", err)
	}
}

func TestProfilingCommandLines(t *testing.T) {
	tool := Tool{Path: "ncu"}
	tests := []struct {
		name string
		argv []string
	}{
		{"plugin-timing-cold", tool.Profiling(Reach{Process: PluginProcess, KernelRegex: AttentionKernels}, TimingMeasure("cold"), Limit{}, "r", "l")},
		{"worker-timing-hot", tool.Profiling(Reach{Process: WorkerProcess, NVTX: true}, TimingMeasure("hot"), Limit{}, "r", "l")},
		{"plugin-profile", tool.Profiling(Reach{Process: PluginProcess, KernelRegex: AttentionKernels}, ProfileMeasure(), Limit{Skip: 2, Count: 1}, "r", "l")},
		{"import-renamed", append([]string{"ncu"}, ImportArgs("r.ncu-rep", true)...)},
	}
	var out strings.Builder
	for _, tt := range tests {
		out.WriteString(tt.name + ": " + strings.Join(tt.argv, " ") + "\n")
	}
	golden(t, "command-lines", out.String())
}

// TestCallRangeIsTheWorkersName: flashcore_worker.py's call_range builds
// the same literal (python/tests/test_profiler_marks.py).
func TestCallRangeIsTheWorkersName(t *testing.T) {
	if got := CallRange(RowKey{"b1-h8-s512-d64-fp16", "sdpa"}, 3); got != "flashcore call b1-h8-s512-d64-fp16 sdpa #3" {
		t.Errorf("CallRange = %q", got)
	}
}
