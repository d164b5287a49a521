package runreport

import (
	"bytes"
	"encoding/csv"
	"slices"
	"testing"

	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/results"
)

// TestCSVParamColumns: the params' columns are the axes of the run's ops,
// attention's always first, each op's case filling its own axes only; a
// param of an op this build does not know still gets a column.
func TestCSVParamColumns(t *testing.T) {
	cases := []results.Case{
		{ID: "rmsnorm-r4-c8-fp16", Op: "rmsnorm", Params: map[string]string{"rows": "4", "cols": "8", "dtype": "fp16"}},
		{ID: "newop-1", Op: "newop", Params: map[string]string{"width": "3"}},
	}
	tests := []struct {
		name    string
		cases   []results.Case
		columns []string
		values  [][]string // per case: the value of each column named in columns
	}{
		{"attention alone keeps its columns", nil,
			[]string{"batch", "heads", "kv_heads", "seq_q", "seq_k", "head_dim", "dtype", "causal", "mode"}, nil},
		{"rmsnorm adds rows and cols after attention's axes", cases[:1],
			[]string{"batch", "heads", "kv_heads", "seq_q", "seq_k", "head_dim", "dtype", "causal", "mode", "rows", "cols"},
			[][]string{{"", "", "", "", "", "", "fp16", "", "", "4", "8"}}},
		{"an unknown op's params are kept", cases,
			[]string{"batch", "heads", "kv_heads", "seq_q", "seq_k", "head_dim", "dtype", "causal", "mode", "rows", "cols", "width"},
			[][]string{{"", "", "", "", "", "", "fp16", "", "", "4", "8", ""}, {"", "", "", "", "", "", "", "", "", "", "", "3"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := &results.Run{Cases: tt.cases}
			for _, c := range tt.cases {
				run.Results = append(run.Results, timedResult(c.ID, "cpu-reference", results.StatusPass, 100))
			}
			var out bytes.Buffer
			if err := Render(&out, run, Options{Format: report.FormatCSV}); err != nil {
				t.Fatal(err)
			}
			records, err := csv.NewReader(&out).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			header := records[0]
			start := slices.Index(header, "shape") + 1
			end := slices.Index(header, "distribution")
			if got := header[start:end]; !slices.Equal(got, tt.columns) {
				t.Fatalf("param columns %q, want %q", got, tt.columns)
			}
			for i, want := range tt.values {
				if got := records[1+i][start:end]; !slices.Equal(got, want) {
					t.Errorf("case %s: params %q, want %q", tt.cases[i].ID, got, want)
				}
				if len(records[1+i]) != len(header) {
					t.Errorf("case %s: %d fields under %d columns", tt.cases[i].ID, len(records[1+i]), len(header))
				}
			}
		})
	}
}
