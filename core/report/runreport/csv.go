package runreport

import (
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/report/cell"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/internal/untrusted"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/sdk"
)

// csvModes are the L2 modes that get columns. Both always do, so that the
// columns are the same in every file.
var csvModes = []sdk.L2Mode{sdk.L2Hot, sdk.L2Cold}

// statsColumns are the figures of one results.Stats, in column order.
var statsColumns = []string{"n", "median_ns", "mean_ns", "stdev_ns", "min_ns", "max_ns", "p10_ns", "p90_ns", "rel_noise"}

// csvHeader lists every column: the case (its ID, label and params, one
// column per axis of its op), the row, its speedup and derived figures, its
// check, then the timings of each L2 mode.
func csvHeader(params []string) []string {
	header := append([]string{"case_id", "shape"}, params...)
	header = append(header,
		"distribution", "input_sha256", "flops", "bytes",
		"backend", "variant", "label", "tunables", "status", "reason", "loaded_sha256", "duration_ns",
		"primary_l2", "speedup", "baseline", "tflops", "gbps", "pct_peak_tflops", "pct_peak_gbps",
		"max_abs_err", "rel_l2_err", "nan", "inf", "unwritten", "violations", "rows_checked", "rows_total",
		"sampled", "row_seed", "out_of_range", "atol", "rtol", "rel_l2_tolerance",
	)
	for _, m := range csvModes {
		header = append(header, string(m)+"_method", string(m)+"_sm_clock_mhz", string(m)+"_throttled")
		for _, kind := range []string{"kernel", "call", "cross_check"} {
			for _, stat := range statsColumns {
				header = append(header, fmt.Sprintf("%s_%s_%s", m, kind, stat))
			}
		}
	}
	return append(header, "gpu_index", "gpu_name", "gpu_uuid")
}

func writeCSV(w io.Writer, v *report.View) error {
	out := csv.NewWriter(w)
	params := paramColumns(v)
	if err := out.Write(csvHeader(params)); err != nil {
		return err
	}
	for _, c := range v.Cases {
		base := baselineName(c)
		for _, r := range c.Rows {
			if err := out.Write(guardCells(csvRecord(v, c, r, base, params))); err != nil {
				return err
			}
		}
	}
	out.Flush()
	return out.Error()
}

// baselineName is the name of the case's baseline row, "" for none.
func baselineName(c report.Case) string {
	for _, r := range c.Rows {
		if r.IsBaseline {
			return r.Name
		}
	}
	return ""
}

// paramColumns are the params' columns: every axis of the run's ops
// (ops.ParamColumns: attention's always, so that its files keep their
// columns, and an axis left out at its default only when a case sets
// it), then any param an op unknown to this build recorded.
func paramColumns(v *report.View) []string {
	var opNames []string
	for _, c := range v.Cases {
		if c.Info != nil && !slices.Contains(opNames, c.Info.OpName()) {
			opNames = append(opNames, c.Info.OpName())
		}
	}
	columns := ops.ParamColumns(opNames, func(axis string) bool {
		return slices.ContainsFunc(v.Cases, func(c report.Case) bool {
			if c.Info == nil {
				return false
			}
			_, set := c.Info.Params[axis]
			return set
		})
	})
	for _, c := range v.Cases {
		if c.Info == nil {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(c.Info.Params)) {
			if !slices.Contains(columns, k) {
				columns = append(columns, k)
			}
		}
	}
	return columns
}

func csvRecord(v *report.View, c report.Case, r report.Row, base string, params []string) []string {
	record := append(caseFields(c, params), r.Backend, r.Variant, r.Name, tunablesField(r.Tunables), string(r.Status),
		r.Reason, r.LoadedSHA256, strconv.FormatInt(int64(r.Duration), 10), string(v.Primary))
	record = append(record, speedupField(r.Speedup), base)
	record = append(record, derivedFields(r.Result)...)
	record = append(record, checkFields(r.Check)...)
	for _, m := range csvModes {
		record = append(record, timingFields(r.Result, m)...)
	}
	if d := r.Device; d != nil {
		return append(record, strconv.Itoa(d.Index), d.Name, d.UUID)
	}
	return append(record, "", "", "")
}

func caseFields(c report.Case, params []string) []string {
	if c.Info == nil {
		return append([]string{c.ID}, make([]string, len(params)+5)...)
	}
	fields := []string{c.ID, caseLabel(*c.Info)}
	for _, k := range params {
		fields = append(fields, c.Info.Params[k])
	}
	return append(fields, c.Info.Distribution, c.Info.InputSHA256, cell.Number(c.Info.FLOPs), cell.Number(c.Info.Bytes))
}

// tunablesField writes tunables as "k=v;k=v", keys sorted.
func tunablesField(tunables map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(tunables)) {
		parts = append(parts, k+"="+tunables[k])
	}
	return strings.Join(parts, ";")
}

func speedupField(x float64) string {
	if !cell.Finite(x) {
		return ""
	}
	return cell.Number(x)
}

func derivedFields(r *results.Result) []string {
	if len(r.Timings) == 0 {
		return make([]string, 4)
	}
	d := r.Derived
	return []string{cell.Number(d.TFLOPS), cell.Number(d.GBps), cell.Number(d.PctPeakTFLOPS), cell.Number(d.PctPeakGBps)}
}

func checkFields(c *results.CheckResult) []string {
	if c == nil {
		return make([]string, 14)
	}
	return []string{cell.Number(c.MaxAbsErr), cell.Number(c.RelL2Err), strconv.Itoa(c.NaN), strconv.Itoa(c.Inf),
		strconv.Itoa(c.Unwritten), strconv.Itoa(c.Violations), strconv.Itoa(c.RowsChecked), strconv.Itoa(c.RowsTotal),
		strconv.FormatBool(c.Sampled), rowSeedField(c.RowSeed), strconv.Itoa(c.OutOfRange), cell.Number(c.Tolerance.Atol), cell.Number(c.Tolerance.Rtol), cell.Number(c.Tolerance.RelL2)}
}

func timingFields(r *results.Result, m sdk.L2Mode) []string {
	t, ok := r.TimingFor(m)
	if !ok {
		return make([]string, 3+3*len(statsColumns))
	}
	fields := []string{t.Method, cell.Number(t.SMClockMHz), strconv.FormatBool(t.Throttled)}
	fields = append(fields, statsFields(&t.Kernel)...)
	fields = append(fields, statsFields(&t.Call)...)
	return append(fields, statsFields(t.CrossCheck)...)
}

func statsFields(s *results.Stats) []string {
	if s == nil || s.N == 0 {
		return make([]string, len(statsColumns))
	}
	return []string{strconv.Itoa(s.N), cell.Number(s.MedianNs), cell.Number(s.MeanNs), cell.Number(s.StdevNs),
		cell.Number(s.MinNs), cell.Number(s.MaxNs), cell.Number(s.P10Ns), cell.Number(s.P90Ns), cell.Number(s.RelNoise)}
}

// rowSeedField is the seed that drew a sampled check's rows, "" when every
// row was checked.
func rowSeedField(seed uint64) string {
	if seed == 0 {
		return ""
	}
	return strconv.FormatUint(seed, 10)
}

// guardCells keeps a spreadsheet from running a plugin's text as a
// formula (untrusted.CSVCell); numbers are left as they are.
func guardCells(record []string) []string {
	for i, c := range record {
		record[i] = untrusted.CSVCell(c)
	}
	return record
}
