package ncu

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Kernel is one profiled kernel launch: one row of ncu's raw page.
type Kernel struct {
	// ID is ncu's sequence number of the profiled launch in its report.
	ID int
	// Name is the kernel's function name, or, when the report was printed
	// with NVTX renaming, its innermost push/pop range.
	Name string
	// Attributes are the non-metric columns (Process ID, Context, Stream,
	// Block Size, Grid Size, Device, CC…), as printed.
	Attributes map[string]string
	Metrics    map[string]Metric
}

// Metric is one metric as ncu printed it.
type Metric struct {
	Unit string
	Text string
}

// attributeColumns are the raw page's columns that are not metrics. Older
// ncu versions print Kernel Time where newer ones print Block Size, Grid
// Size, Device and CC.
var attributeColumns = map[string]bool{
	"ID": true, "Process ID": true, "Process Name": true, "Host Name": true, "Kernel Name": true,
	"Kernel Time": true, "Context": true, "Stream": true, "Block Size": true, "Grid Size": true,
	"Device": true, "CC": true,
}

// ParseRaw reads ncu's raw page as CSV (ncu --csv --page raw): a header
// row of column names, a row of units, then one row per profiled kernel.
// Lines before the header that ncu may print (==PROF==, ==WARNING==) are
// skipped.
func ParseRaw(r io.Reader) ([]Kernel, error) {
	lines, first, err := csvLines(r)
	if err != nil {
		return nil, err
	}
	cr := csv.NewReader(strings.NewReader(lines))
	records, err := cr.ReadAll()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("ncu CSV line %d: %v", first+pe.Line-1, pe.Err)
		}
		return nil, fmt.Errorf("ncu CSV: %w", err)
	}
	header := records[0]
	if len(records) < 2 || records[1][0] != "" {
		return nil, fmt.Errorf("ncu CSV line %d: want a row of units after the header (raw page, --page raw)", first+1)
	}
	units := records[1]
	kernels := make([]Kernel, 0, len(records)-2)
	for i, rec := range records[2:] {
		k, err := kernelOf(header, units, rec)
		if err != nil {
			return nil, fmt.Errorf("ncu CSV line %d: %w", first+2+i, err)
		}
		kernels = append(kernels, k)
	}
	return kernels, nil
}

// csvLines returns the CSV part of ncu's output, from the header on, and
// the header's line number. Lines after it that are not CSV rows (ncu's
// own messages) are dropped.
func csvLines(r io.Reader) (string, int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var b strings.Builder
	first, n := 0, 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if first == 0 && strings.HasPrefix(line, `"ID",`) {
			first = n
		}
		if first > 0 && strings.HasPrefix(line, `"`) {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return "", 0, err
	}
	if first == 0 {
		return "", 0, errors.New(`ncu CSV: no header row ("ID","Process ID",…); was the report printed with --csv --page raw?`)
	}
	return b.String(), first, nil
}

func kernelOf(header, units, rec []string) (Kernel, error) {
	if len(rec) != len(header) {
		return Kernel{}, fmt.Errorf("%d fields, want %d as in the header", len(rec), len(header))
	}
	k := Kernel{Attributes: map[string]string{}, Metrics: map[string]Metric{}}
	for i, name := range header {
		if attributeColumns[name] {
			k.Attributes[name] = rec[i]
			continue
		}
		k.Metrics[name] = Metric{Unit: units[i], Text: rec[i]}
	}
	k.Name = k.Attributes["Kernel Name"]
	id, err := strconv.Atoi(k.Attributes["ID"])
	if err != nil {
		return Kernel{}, fmt.Errorf("ID %q is not a number", k.Attributes["ID"])
	}
	k.ID = id
	return k, nil
}

// Value is metric name in base units (ns, bytes, per second; % and counts
// as printed), and false when the kernel has no such metric or ncu printed
// no number for it ("n/a").
func (k Kernel) Value(name string) (float64, bool) {
	m, ok := k.Metrics[name]
	if !ok {
		return 0, false
	}
	return m.Value()
}

// Value is the metric in base units; false when it is not a number.
func (m Metric) Value() (float64, bool) {
	text := strings.ReplaceAll(strings.TrimSpace(m.Text), ",", "")
	x, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return 0, false
	}
	return x * unitScale(m.Unit), true
}
