package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/suite"
)

func TestRowRequests(t *testing.T) {
	tests := []struct {
		in       []string
		names    []string
		variants map[string][]string
	}{
		{[]string{"cpu-reference", "triton"}, []string{"cpu-reference", "triton"}, map[string][]string{}},
		{[]string{"sdpa"}, []string{"pytorch-sdpa"}, map[string][]string{"pytorch-sdpa": {"sdpa"}}},
		{[]string{"sdpa-flash", "pytorch-sdpa:sdpa-math"}, []string{"pytorch-sdpa"}, map[string][]string{"pytorch-sdpa": {"sdpa-flash", "sdpa-math"}}},
		{[]string{"sdpa", "pytorch-sdpa"}, []string{"pytorch-sdpa"}, map[string][]string{}},
		{[]string{"py:kernels/my_fa.py", "cu:k.toml", "cuda-v8"}, []string{"py:kernels/my_fa.py", "cu:k.toml", "cuda-v8"}, map[string][]string{}},
		{[]string{"mine:fast"}, []string{"mine"}, map[string][]string{"mine": {"fast"}}},
	}
	for _, tt := range tests {
		names, variants := rowRequests(tt.in)
		if !reflect.DeepEqual(names, tt.names) || !reflect.DeepEqual(variants, tt.variants) {
			t.Errorf("rowRequests(%q) = %q %v, want %q %v", tt.in, names, variants, tt.names, tt.variants)
		}
	}
}

// TestSuiteRows: a suite's [[backends]] names rows as --backends does.
func TestSuiteRows(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want []suite.BackendSelection
	}{
		{"a row's own name", "[[backends]]\nname = \"sdpa-math\"\n",
			[]suite.BackendSelection{{Name: "pytorch-sdpa", Line: 2, Variants: []string{"sdpa-math"}}}},
		{"backend:variant, merged with a row's name", "[[backends]]\nname = \"pytorch-sdpa:sdpa\"\n[[backends]]\nname = \"sdpa-flash\"\n",
			[]suite.BackendSelection{{Name: "pytorch-sdpa", Line: 2, Variants: []string{"sdpa", "sdpa-flash"}}}},
		{"a whole backend wins over its rows", "[[backends]]\nname = \"sdpa\"\n[[backends]]\nname = \"pytorch-sdpa\"\n",
			[]suite.BackendSelection{{Name: "pytorch-sdpa", Line: 2}}},
		{"a plugin's own name stays", "[[backends]]\nname = \"cuda-v8\"\n",
			[]suite.BackendSelection{{Name: "cuda-v8", Line: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := suite.Parse("rows.toml", []byte("name = \"rows\"\n"+tt.toml+"[[cases]]\nbatch = 1\nheads = 1\nseq_q = 8\nhead_dim = 16\n"))
			if err != nil {
				t.Fatal(err)
			}
			suiteRows(s)
			var got []suite.BackendSelection
			for _, b := range s.Backends {
				// The name's line, counted from the suite's first line.
				got = append(got, suite.BackendSelection{Name: b.Name, Line: b.Line - 1, Variants: b.Variants})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestRunOneRowOfABackend: --backends sdpa-math runs that row of
// pytorch-sdpa alone, and BACKEND:VARIANT names an unknown variant with
// the backend's list.
func TestRunOneRowOfABackend(t *testing.T) {
	python := os.Getenv("FLASHCORE_PYTHON")
	if python == "" {
		t.Skip("FLASHCORE_PYTHON is not set (make test sets it to the venv with torch)")
	}
	dir := pluginDir(t, map[string]string{"pytorch-sdpa": "plugins/pytorch-sdpa/cmd/flashcore-backend-pytorch-sdpa"})
	env := map[string]string{"FLASHCORE_PLUGIN_PATH": dir}
	out := filepath.Join(t.TempDir(), "r.json")
	_, stderr, code := runMain(t, env, "run", "--suite", filepath.Join("testdata", "small.toml"), "--backends", "sdpa-math", "--out", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var run struct {
		Results []struct{ Label string } `json:"results"`
	}
	if err := json.Unmarshal(data, &run); err != nil {
		t.Fatal(err)
	}
	if len(run.Results) == 0 {
		t.Fatal("no rows")
	}
	for _, r := range run.Results {
		if r.Label != "sdpa-math" {
			t.Errorf("row %q ran; want sdpa-math alone", r.Label)
		}
	}
	_, stderr, code = runMain(t, env, "run", "--suite", filepath.Join("testdata", "small.toml"), "--backends", "pytorch-sdpa:nope", "--out", out)
	if code == ExitOK || !strings.Contains(stderr, `has no variant "nope"`) {
		t.Errorf("pytorch-sdpa:nope: exit %d: %s", code, stderr)
	}
}
