package results

import (
	"bytes"
	"encoding/json"
	"math"
)

// Marshal encodes run as the results file holds it: indented JSON with the
// fields in declaration order and map keys sorted, ending in a newline.
func Marshal(run *Run) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(run); err != nil {
		return nil, err
	}
	return flattenSampleLists(buf.Bytes()), nil
}

// flattenSampleLists puts every list of raw samples (a key ending in
// "_ns" whose value is a list) on one line: the indenting encoder would
// give each sample a line of its own, and a row can hold thousands.
// Inside a JSON string a quote is escaped and a newline is written as \n,
// so the pattern below only ever matches a key followed by a list.
func flattenSampleLists(indented []byte) []byte {
	const open = "_ns\": [\n"
	var out bytes.Buffer
	rest := indented
	for {
		at := bytes.Index(rest, []byte(open))
		if at < 0 {
			out.Write(rest)
			return out.Bytes()
		}
		end := bytes.IndexByte(rest[at:], ']') + at
		if bytes.ContainsAny(rest[at+len(open):end], "{[\"") {
			// Not a list of numbers: leave it as the encoder wrote it.
			out.Write(rest[:at+len(open)])
			rest = rest[at+len(open):]
			continue
		}
		out.Write(rest[:at+len(open)-1]) // up to and including "["
		for i, field := range bytes.Fields(rest[at+len(open) : end]) {
			if i > 0 {
				out.WriteByte(' ')
			}
			out.Write(field)
		}
		rest = rest[end:]
	}
}

// number is a float64 as the results file carries it: finite values are
// plain JSON numbers, NaN and ±Inf (which JSON cannot carry) are null, and
// null reads back as NaN.
type number float64

func (n number) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

func (n *number) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*n = number(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(data, &f); err != nil {
		return err
	}
	*n = number(f)
	return nil
}

// statsJSON, checkJSON and derivedJSON mirror the types whose figures can
// be non-finite, field for field, with number in place of float64.

type statsJSON struct {
	N        int    `json:"n"`
	MedianNs number `json:"median_ns"`
	MeanNs   number `json:"mean_ns"`
	StdevNs  number `json:"stdev_ns"`
	MinNs    number `json:"min_ns"`
	MaxNs    number `json:"max_ns"`
	P10Ns    number `json:"p10_ns"`
	P90Ns    number `json:"p90_ns"`
	RelNoise number `json:"rel_noise"`
}

func (s Stats) MarshalJSON() ([]byte, error) {
	return json.Marshal(statsJSON{
		N: s.N, MedianNs: number(s.MedianNs), MeanNs: number(s.MeanNs), StdevNs: number(s.StdevNs),
		MinNs: number(s.MinNs), MaxNs: number(s.MaxNs), P10Ns: number(s.P10Ns), P90Ns: number(s.P90Ns),
		RelNoise: number(s.RelNoise),
	})
}

func (s *Stats) UnmarshalJSON(data []byte) error {
	var j statsJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*s = Stats{
		N: j.N, MedianNs: float64(j.MedianNs), MeanNs: float64(j.MeanNs), StdevNs: float64(j.StdevNs),
		MinNs: float64(j.MinNs), MaxNs: float64(j.MaxNs), P10Ns: float64(j.P10Ns), P90Ns: float64(j.P90Ns),
		RelNoise: float64(j.RelNoise),
	}
	return nil
}

type checkJSON struct {
	Output      string        `json:"output,omitempty"`
	MaxAbsErr   number        `json:"max_abs_err"`
	RelL2Err    number        `json:"rel_l2_err"`
	NaN         int           `json:"nan"`
	Inf         int           `json:"inf"`
	Unwritten   int           `json:"unwritten"`
	Violations  int           `json:"violations"`
	RowsChecked int           `json:"rows_checked"`
	RowsTotal   int           `json:"rows_total"`
	Sampled     bool          `json:"sampled"`
	RowSeed     uint64        `json:"row_seed,omitempty"`
	OutOfRange  int           `json:"out_of_range"`
	EveryRow    *everyRowJSON `json:"every_row,omitempty"`
	Tolerance   Tolerance     `json:"tolerance"`
	Outputs     []CheckResult `json:"outputs,omitempty"`
}

type everyRowJSON struct {
	Reference   string `json:"reference"`
	Calibration number `json:"calibration"`
	MaxAbsErr   number `json:"max_abs_err"`
	RelL2Err    number `json:"rel_l2_err"`
	Violations  int    `json:"violations"`
	Rows        int    `json:"rows"`
}

func (e *EveryRow) toJSON() *everyRowJSON {
	if e == nil {
		return nil
	}
	return &everyRowJSON{Reference: e.Reference, Calibration: number(e.Calibration), MaxAbsErr: number(e.MaxAbsErr),
		RelL2Err: number(e.RelL2Err), Violations: e.Violations, Rows: e.Rows}
}

func (j *everyRowJSON) fromJSON() *EveryRow {
	if j == nil {
		return nil
	}
	return &EveryRow{Reference: j.Reference, Calibration: float64(j.Calibration), MaxAbsErr: float64(j.MaxAbsErr),
		RelL2Err: float64(j.RelL2Err), Violations: j.Violations, Rows: j.Rows}
}

func (c CheckResult) MarshalJSON() ([]byte, error) {
	return json.Marshal(checkJSON{
		Output:    c.Output,
		MaxAbsErr: number(c.MaxAbsErr), RelL2Err: number(c.RelL2Err),
		NaN: c.NaN, Inf: c.Inf, Unwritten: c.Unwritten, Violations: c.Violations,
		RowsChecked: c.RowsChecked, RowsTotal: c.RowsTotal, Sampled: c.Sampled,
		RowSeed: c.RowSeed, OutOfRange: c.OutOfRange, Tolerance: c.Tolerance,
		Outputs: c.Outputs, EveryRow: c.EveryRow.toJSON(),
	})
}

func (c *CheckResult) UnmarshalJSON(data []byte) error {
	var j checkJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*c = CheckResult{
		Output:    j.Output,
		MaxAbsErr: float64(j.MaxAbsErr), RelL2Err: float64(j.RelL2Err),
		NaN: j.NaN, Inf: j.Inf, Unwritten: j.Unwritten, Violations: j.Violations,
		RowsChecked: j.RowsChecked, RowsTotal: j.RowsTotal, Sampled: j.Sampled,
		RowSeed: j.RowSeed, OutOfRange: j.OutOfRange, Tolerance: j.Tolerance,
		Outputs: j.Outputs, EveryRow: j.EveryRow.fromJSON(),
	}
	return nil
}

type derivedJSON struct {
	TFLOPS        number `json:"tflops"`
	GBps          number `json:"gbps"`
	PctPeakTFLOPS number `json:"pct_peak_tflops"`
	PctPeakGBps   number `json:"pct_peak_gbps"`
}

func (d Derived) MarshalJSON() ([]byte, error) {
	return json.Marshal(derivedJSON{
		TFLOPS: number(d.TFLOPS), GBps: number(d.GBps),
		PctPeakTFLOPS: number(d.PctPeakTFLOPS), PctPeakGBps: number(d.PctPeakGBps),
	})
}

func (d *Derived) UnmarshalJSON(data []byte) error {
	var j derivedJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*d = Derived{
		TFLOPS: float64(j.TFLOPS), GBps: float64(j.GBps),
		PctPeakTFLOPS: float64(j.PctPeakTFLOPS), PctPeakGBps: float64(j.PctPeakGBps),
	}
	return nil
}
