package cpureference

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/flashcore/bench/conformance"
	"github.com/flashcore/bench/core/check"
	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/sdk"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// caseFiles writes the inputs of p, encoded in dtype, as the host would,
// and returns the request that names them.
func caseFiles(t *testing.T, p problem, dtype sdk.DType) sdk.PrepareRequest {
	t.Helper()
	dir := t.TempDir()
	p.shape.DType = dtype
	files := sdk.Tensors{
		Q:      filepath.Join(dir, "q.bin"),
		K:      filepath.Join(dir, "k.bin"),
		V:      filepath.Join(dir, "v.bin"),
		Output: filepath.Join(dir, "out.bin"),
	}
	for file, values := range map[string][]float32{files.Q: p.q, files.K: p.k, files.V: p.v} {
		raw := make([]byte, len(values)*dtype.Size())
		encode(dtype, values, raw)
		if err := os.WriteFile(file, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return sdk.PrepareRequest{CaseID: "case", Variant: variantName, Shape: p.shape, Files: files}
}

func mustPrepare(t *testing.T, b *Backend, req sdk.PrepareRequest) sdk.Prepared {
	t.Helper()
	prepared, err := b.Prepare(context.Background(), req)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if len(prepared.Diagnostics) > 0 {
		t.Fatalf("Prepare: unexpected diagnostics %+v", prepared.Diagnostics)
	}
	return prepared
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// The hash must be over the bytes loaded, Q then K then V, and not an echo
// of the hash the host sent.
func TestPrepareHashesLoadedBytesInOrder(t *testing.T) {
	req := caseFiles(t, randomProblem(shape(1, 4, 2, 40, 50, 64, false), 1, 3), sdk.FP16)
	req.InputSHA256 = strings.Repeat("0", 64)
	prepared := mustPrepare(t, newBackend(), req)

	var all []byte
	for _, file := range []string{req.Files.Q, req.Files.K, req.Files.V} {
		all = append(all, readFile(t, file)...)
	}
	want := sha256.Sum256(all)
	if prepared.LoadedSHA256 != hex.EncodeToString(want[:]) {
		t.Errorf("LoadedSHA256 = %s, want sha256(Q||K||V) = %x", prepared.LoadedSHA256, want)
	}
}

func TestPrepareDiagnostics(t *testing.T) {
	tests := []struct {
		name     string
		change   func(*sdk.PrepareRequest)
		severity sdk.Severity
		summary  string // a part of the one diagnostic's summary or detail
	}{
		{"unknown variant", func(r *sdk.PrepareRequest) { r.Variant = "cpu-fast" },
			sdk.Unsupported, `unknown variant "cpu-fast"`},
		{"tunable", func(r *sdk.PrepareRequest) { r.Tunables = map[string]string{"tile_n": "64"} },
			sdk.Unsupported, `unknown tunable "tile_n"`},
		{"tunable value", func(r *sdk.PrepareRequest) { r.Tunables = map[string]string{"workers": "3"} },
			sdk.Unsupported, `tunable workers: "3" is not one of`},
		{"attention's tunable on rmsnorm", func(r *sdk.PrepareRequest) {
			r.Op, r.Tunables = rmsnormOp, map[string]string{tunableQueryRows: "16"}
		}, sdk.Unsupported, "tunable query_tile_rows does not apply to op rmsnorm (it applies to attention)"},
		{"sequence too long", func(r *sdk.PrepareRequest) { r.Shape.SeqK = maxSeqLen + 1 },
			sdk.Unsupported, "sequence length 2049 over the backend's limit of 2048"},
		{"unknown dtype", func(r *sdk.PrepareRequest) { r.Shape.DType = "fp8" },
			sdk.Unsupported, "dtype fp8 not supported"},
		{"heads not a multiple", func(r *sdk.PrepareRequest) { r.Shape.KVHeads = 3 },
			sdk.Unsupported, "heads 4 is not a multiple of kv_heads 3"},
		{"missing input", func(r *sdk.PrepareRequest) { r.Files.K += ".missing" },
			sdk.Failure, "read K: open "},
		{"short input", func(r *sdk.PrepareRequest) { r.Shape.SeqQ++ },
			sdk.Failure, "has 10240 bytes, want 10752"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := caseFiles(t, randomProblem(shape(1, 4, 2, 20, 20, 64, false), 1, 4), sdk.FP16)
			tc.change(&req)
			prepared, err := newBackend().Prepare(context.Background(), req)
			if err != nil {
				t.Fatalf("Prepare returned an error, want a diagnostic: %v", err)
			}
			if len(prepared.Diagnostics) != 1 {
				t.Fatalf("diagnostics = %+v, want one", prepared.Diagnostics)
			}
			got := prepared.Diagnostics[0]
			if got.Severity != tc.severity || !strings.Contains(got.Summary+": "+got.Detail, tc.summary) {
				t.Errorf("diagnostic = %+v, want severity %s mentioning %q", got, tc.severity, tc.summary)
			}
		})
	}
}

// Fetch must write every element of the output file, in the case's dtype,
// and the output must pass the check flashcore run applies to it (the
// conformance kit's CheckOutput, on the bytes the backend loaded).
func TestFetchWritesEveryElement(t *testing.T) {
	for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32} {
		t.Run(string(dtype), func(t *testing.T) {
			p := randomProblem(shape(2, 4, 2, 70, 90, 64, true), 1, 5)
			req := caseFiles(t, p, dtype)
			b := newBackend()
			mustPrepare(t, b, req)
			if _, err := b.Fetch(context.Background(), sdk.FetchRequest{CaseID: req.CaseID}); err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			raw := readFile(t, req.Files.Output)
			if n := countPoisoned(raw, dtype.Size()); n != 0 {
				t.Errorf("%d elements of the output are poison", n)
			}
			loaded := &inputs.Tensors{Shape: req.Shape,
				Q: readFile(t, req.Files.Q), K: readFile(t, req.Files.K), V: readFile(t, req.Files.V)}
			loaded.SHA256 = inputs.HashInputs(loaded.Q, loaded.K, loaded.V)
			if r := conformance.CheckOutput(loaded, raw); r.Verdict != check.Pass {
				t.Errorf("%s (max abs err %.3g, rel L2 %.3g)", r.Reason, r.MaxAbsErr, r.RelL2Err)
			}
		})
	}
}

// A second Fetch whose forward pass skips elements must show them as
// poison, not as the values the first Fetch left in the buffer.
func TestFetchPoisonsBeforeEveryRun(t *testing.T) {
	for _, dtype := range []sdk.DType{sdk.FP16, sdk.BF16, sdk.FP32} {
		t.Run(string(dtype), func(t *testing.T) {
			req := caseFiles(t, randomProblem(shape(1, 2, 2, 30, 30, 64, false), 1, 6), dtype)
			b := newBackend()
			mustPrepare(t, b, req)
			fetch := func() []byte {
				if _, err := b.Fetch(context.Background(), sdk.FetchRequest{CaseID: req.CaseID}); err != nil {
					t.Fatalf("Fetch: %v", err)
				}
				return readFile(t, req.Files.Output)
			}
			fetch()
			written := 100
			b.attend = func(p problem) { clear(p.out[:written]) } // a broken pass
			elements := len(b.cases[req.CaseID].outputs[0].values)
			if n := countPoisoned(fetch(), dtype.Size()); n != elements-written {
				t.Errorf("%d elements poisoned, want the %d the pass did not write", n, elements-written)
			}
		})
	}
}

func countPoisoned(raw []byte, size int) int {
	poison := bytes.Repeat([]byte{sdk.PoisonByte}, size)
	n := 0
	for i := 0; i+size <= len(raw); i += size {
		if bytes.Equal(raw[i:i+size], poison) {
			n++
		}
	}
	return n
}

func TestRunFollowsTheMeasurement(t *testing.T) {
	for _, l2 := range []sdk.L2Mode{sdk.L2Hot, sdk.L2Cold} {
		t.Run(string(l2), func(t *testing.T) {
			req := caseFiles(t, randomProblem(shape(1, 2, 2, 64, 64, 64, false), 1, 7), sdk.FP16)
			b := newBackend()
			mustPrepare(t, b, req)
			m := sdk.Measurement{WarmupRuns: 2, MinSamples: 6, MaxSamples: 8, TargetNoise: 0.5,
				TimeCap: time.Second, L2: l2, CallSamples: 4}
			samples, err := b.Run(context.Background(), sdk.RunRequest{CaseID: req.CaseID, Measurement: m})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if n := len(samples.KernelTimes); n < m.MinSamples || n > m.MaxSamples {
				t.Errorf("%d kernel samples, want %d to %d", n, m.MinSamples, m.MaxSamples)
			}
			if len(samples.CallTimes) != m.CallSamples {
				t.Errorf("%d call samples, want %d", len(samples.CallTimes), m.CallSamples)
			}
			for _, d := range append(samples.KernelTimes, samples.CallTimes...) {
				if d <= 0 {
					t.Errorf("sample %v, want a positive duration", d)
				}
			}
			if samples.Method != "wall-clock" {
				t.Errorf("Method = %q, want wall-clock", samples.Method)
			}
		})
	}
}

func TestRunStopsWhenCancelled(t *testing.T) {
	req := caseFiles(t, randomProblem(shape(1, 1, 1, 8, 8, 64, false), 1, 8), sdk.FP32)
	b := newBackend()
	mustPrepare(t, b, req)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := sdk.DefaultMeasurement()
	if _, err := b.Run(ctx, sdk.RunRequest{CaseID: req.CaseID, Measurement: m}); err == nil {
		t.Error("Run with a cancelled context returned no error")
	}
}

func TestReleaseForgetsTheCase(t *testing.T) {
	req := caseFiles(t, randomProblem(shape(1, 1, 1, 8, 8, 64, false), 1, 9), sdk.FP32)
	b := newBackend()
	mustPrepare(t, b, req)
	ctx := context.Background()
	if err := b.Release(ctx, sdk.ReleaseRequest{CaseID: req.CaseID}); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if _, err := b.Fetch(ctx, sdk.FetchRequest{CaseID: req.CaseID}); err == nil {
		t.Error("Fetch after Release returned no error")
	}
	if err := b.Release(ctx, sdk.ReleaseRequest{CaseID: req.CaseID}); err != nil {
		t.Errorf("second Release: %v", err)
	}
}

// The variants are what `flashcore describe` shows; the golden file keeps
// a change to them deliberate.
func TestDescribe(t *testing.T) {
	d, err := New().Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != backendName || !d.Available || d.Device.Kind != "cpu" || d.Device.Cores != runtime.NumCPU() {
		t.Errorf("Describe = %+v, want an available cpu backend named %s with %d cores", d, backendName, runtime.NumCPU())
	}
	got, err := json.MarshalIndent(d.Variants, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "testdata/variants.golden.json", append(got, '\n'))
}

func checkGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := readFile(t, golden)
	if !bytes.Equal(got, want) {
		gotFile := strings.TrimSuffix(golden, ".json") + ".got"
		_ = os.WriteFile(gotFile, got, 0o644)
		t.Errorf("%s differs from the output (written to %s; rerun with -update to accept):\n%s", golden, gotFile, got)
	}
}

func TestBuildString(t *testing.T) {
	info := func(settings ...string) *debug.BuildInfo {
		b := &debug.BuildInfo{GoVersion: "go1.26.8"}
		for i := 0; i+1 < len(settings); i += 2 {
			b.Settings = append(b.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return b
	}
	tests := []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "unknown build"},
		{"no vcs", info(), true, "go1.26.8"},
		{"clean", info("vcs.revision", "7e490df0123456789abc", "vcs.modified", "false"), true, "go1.26.8 7e490df01234"},
		{"modified", info("vcs.revision", "7e490df0123456789abc", "vcs.modified", "true"), true, "go1.26.8 7e490df01234+modified"},
		{"module version", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}}, true, "go1.26.8 v1.2.0"},
		{"devel module", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, true, "go1.26.8"},
	}
	for _, tc := range tests {
		if got := buildString(tc.info, tc.ok); got != tc.want {
			t.Errorf("%s: buildString = %q, want %q", tc.name, got, tc.want)
		}
	}
}
