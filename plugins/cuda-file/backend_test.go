package cudafile

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/internal/cudafile"
)

// example is the split-KV example, seen from this folder.
var example = filepath.Join("..", "..", "examples", "cuda", "splitkv.toml")

func TestParseArgs(t *testing.T) {
	abs, _ := filepath.Abs("kernels/splitkv.toml")
	tests := []struct {
		args       []string
		name, spec string
		err        string
	}{
		{host.CUDAFileArgs("my-kernel", "kernels/splitkv.toml"), "my-kernel", abs, ""},
		{[]string{"--spec", "kernels/splitkv.toml"}, "splitkv", abs, ""},
		{nil, "", "", "it is no backend by itself"},
		{[]string{"--frobnicate"}, "", "", "cuda-file: flag provided but not defined: -frobnicate"},
	}
	for _, tt := range tests {
		name, spec, err := parseArgs(tt.args)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want one containing %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil || name != tt.name || spec != tt.spec {
			t.Errorf("%q: got %q %q %v, want %q %q", tt.args, name, spec, err, tt.name, tt.spec)
		}
	}
}

// Without a spec, or with one that does not validate, the plugin is no
// backend and says why.
func TestUnconfigured(t *testing.T) {
	d, _ := newBackend(nil).Describe(context.Background())
	if d.Available || !strings.Contains(d.UnavailableReason, "[[backends]] cuda") {
		t.Errorf("no spec: %+v", d)
	}
	d, _ = newBackend([]string{"--spec", "../../internal/cudafile/testdata/bad/errors.toml"}).Describe(context.Background())
	if d.Available || d.Name != "errors" || !strings.Contains(d.UnavailableReason, `errors.toml:2: key "colour": unknown key`) {
		t.Errorf("bad spec: %+v", d)
	}
}

// The description carries the spec's capabilities and tunables whether or
// not a GPU is there: describe shows them on any machine.
func TestDescriptionCarriesTheSpec(t *testing.T) {
	spec, err := cudafile.Load(example)
	if err != nil {
		t.Fatal(err)
	}
	d, err := newBackend(host.CUDAFileArgs("splitkv", example)).Describe(context.Background())
	if err != nil || len(d.Variants) != 1 {
		t.Fatalf("Describe = %+v, %v", d, err)
	}
	v := d.Variants[0]
	if v.Name != "splitkv" || len(v.Capabilities.DTypes) != len(spec.Capabilities.DTypes) || len(v.Tunables) != 1 || v.Tunables[0].Name != "SPLITS" {
		t.Errorf("variant %+v", v)
	}
	if !strings.Contains(d.Build, "splitkv.cu") {
		t.Errorf("build %q does not name the source", d.Build)
	}
}

// decodeExample is the paged-decode example: a [decode] table alone.
var decodeExample = filepath.Join("..", "..", "examples", "cuda", "decode", "paged_decode.toml")

// A spec's op tables make the variant run their ops, each with a plan, and
// no attention where the spec has no [[kernels]]: the shared backend's
// checks of ops and plans pass, and the description lists decode.
func TestOpTablesArePlannedOps(t *testing.T) {
	spec, err := cudafile.Load(decodeExample)
	if err != nil {
		t.Fatal(err)
	}
	s := backendSpec("paged", spec, &cudafile.Compiler{})
	if err := s.CheckOps(); err != nil {
		t.Fatal(err)
	}
	if s.Plan != nil || s.Ops["decode"] == nil || len(s.Variant.Ops) != 1 || s.Variant.Ops[0] != "decode" {
		t.Errorf("plan %v, ops %v, variant ops %v", s.Plan != nil, s.Ops, s.Variant.Ops)
	}
	d, err := newBackend(host.CUDAFileArgs("paged", decodeExample)).Describe(context.Background())
	if err != nil || len(d.Variants) != 1 || len(d.Variants[0].Ops) != 1 || d.Variants[0].Ops[0] != "decode" {
		t.Errorf("Describe = %+v, %v", d, err)
	}
	// With attention's kernels too, the variant runs both.
	mixed, err := cudafile.Load(filepath.Join("..", "..", "internal", "cudafile", "testdata", "mixed.toml"))
	if err != nil {
		t.Fatal(err)
	}
	s = backendSpec("mixed", mixed, &cudafile.Compiler{})
	if err := s.CheckOps(); err != nil {
		t.Fatal(err)
	}
	if s.Plan == nil || s.Ops["varlen"] == nil || strings.Join(s.Variant.Ops, ",") != "attention,varlen" {
		t.Errorf("mixed: plan %v, ops %v, variant ops %v", s.Plan != nil, s.Ops, s.Variant.Ops)
	}
}
