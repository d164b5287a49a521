package cudafile

import (
	"os"
	"testing"
)

// ptxas's reports, captured from the pinned toolchain's nvcc 13.5 for
// sm_90 (testdata/ptxas), are read kernel by kernel; a device function's
// properties, printed after its caller's, do not overwrite the caller's.
func TestParseResources(t *testing.T) {
	for _, tc := range []struct {
		file  string
		count int
		want  Resources // one of the kernels
	}{
		{"splitkv-sm_90.txt", 8, Resources{Kernel: "splitkv_fp16_d128", Symbol: "splitkv_fp16_d128", Registers: 40, Framed: true, Counted: true}},
		{"templated-sm_90.txt", 2, Resources{
			Kernel: "_Z8attn_fwdI13__nv_bfloat16Li128ELb0EEvPKT_S3_S3_PS1_iiiif", Symbol: "_Z8attn_fwdI13__nv_bfloat16Li128ELb0EEvPKT_S3_S3_PS1_iiiif",
			Registers: 69, Barriers: 1, SharedBytes: 34944, Framed: true, Counted: true}},
		{"spill-sm_90.txt", 1, Resources{Kernel: "spill", Symbol: "spill", Registers: 24, StackBytes: 472, SpillStores: 672, SpillLoads: 780, Framed: true, Counted: true}},
	} {
		data, err := os.ReadFile("testdata/ptxas/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		got := ParseResources(string(data))
		if len(got) != tc.count {
			t.Errorf("%s: %d kernels, want %d: %+v", tc.file, len(got), tc.count, got)
		}
		found := false
		for _, r := range got {
			if r.Symbol == tc.want.Symbol {
				found = true
				if r != tc.want {
					t.Errorf("%s: %+v, want %+v", tc.file, r, tc.want)
				}
			}
		}
		if !found {
			t.Errorf("%s: no kernel %s in %+v", tc.file, tc.want.Symbol, got)
		}
	}
	if got := ParseResources("ptxas info    : 0 bytes gmem\n"); len(got) != 0 {
		t.Errorf("a report without kernels: %+v", got)
	}
}

// The example's template instances are compiled and reported under their
// template-ids, each with registers.
func TestResourcesOfTheTemplateExample(t *testing.T) {
	nvcc := nvccOrSkip(t)
	spec, err := Load(templated)
	if err != nil {
		t.Fatal(err)
	}
	report, err := (&Compiler{NVCC: nvcc, CacheDir: t.TempDir()}).Resources(spec, "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Kernels) != 8 || report.Kernels[0].Kernel != "attn_fwd<__nv_bfloat16, 128, false>" {
		t.Fatalf("report %+v", report)
	}
	for _, k := range report.Kernels {
		if k.Registers <= 0 || k.SharedBytes <= 0 {
			t.Errorf("%s: %+v", k.Kernel, k)
		}
	}
}
