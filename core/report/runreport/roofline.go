package runreport

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/report/cell"
	"github.com/flashcore/bench/core/report/table"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/sdk"
)

// Peaks are a device's measured peaks, for a roofline (flashcore
// calibrate measures them; docs/loop.md).
type Peaks struct {
	TFLOPS float64 // the fastest large matrix product, 10¹² FLOP/s
	GBps   float64 // a large device-to-device copy, read+write, 10⁹ B/s
	// Method says how they were measured; When is the date.
	Method, When string
}

// WriteRoofline draws each passing, timed row of run on its device's
// roofline: arithmetic intensity (FLOPs over the least bytes moved,
// docs/measurement.md), achieved TFLOP/s and GB/s, each as a share of the
// measured peak, which side of the ridge the row is on, and how close it
// comes to the roof at its intensity, min(peak compute, intensity × peak
// bandwidth). A table per device, its header naming the measured peaks and
// the datasheet's beside them. peaks is keyed by device name; a device
// without them is judged against its datasheet, and the header says so.
func WriteRoofline(w io.Writer, run *results.Run, peaks map[string]Peaks, markdown bool) error {
	devices, rows := rooflineRows(run)
	for i, d := range devices {
		if i > 0 {
			fmt.Fprintln(w)
		}
		p, measured := peaks[d.Name]
		if !measured {
			p = Peaks{TFLOPS: d.PeakTFLOPS, GBps: d.PeakGBps}
		}
		header := rooflineHeader(d, p, measured)
		if markdown {
			header = "**" + d.Name + "** · " + header + "\n"
		} else {
			header = d.Name + " · " + header
		}
		fmt.Fprintln(w, header)
		t := table.Grid{
			Header: []string{"Case", "Row", "FLOP/B", "TFLOP/s", "% compute", "GB/s", "% bandwidth", "Bound", "% of roof"},
			Right:  []bool{false, false, true, true, true, true, true, false, true},
		}
		for _, r := range rows[d.Name] {
			t.Rows = append(t.Rows, rooflineRow(run, r, p))
		}
		if err := table.Draw(w, t, markdown); err != nil {
			return err
		}
	}
	if len(devices) == 0 {
		fmt.Fprintln(w, "no passing, timed row to place on a roofline")
	}
	return nil
}

func rooflineHeader(d sdk.Device, p Peaks, measured bool) string {
	ridge := cell.Missing
	if p.GBps > 0 {
		ridge = cell.Sig3(p.TFLOPS*1e3/p.GBps) + " FLOP/B"
	}
	if !measured && p.TFLOPS <= 0 && p.GBps <= 0 {
		return "no peaks: no calibration of this device is cached (run flashcore calibrate on it) and its backend reports no datasheet figures"
	}
	if !measured {
		return fmt.Sprintf("datasheet peaks (no calibration of this device is cached: run flashcore calibrate on it): %s TFLOP/s, %s GB/s; ridge at %s",
			rateCell(p.TFLOPS), rateCell(p.GBps), ridge)
	}
	return fmt.Sprintf("measured peaks %s TFLOP/s (datasheet %s), %s GB/s (datasheet %s); ridge at %s; %s, %s",
		rateCell(p.TFLOPS), rateCell(d.PeakTFLOPS), rateCell(p.GBps), rateCell(d.PeakGBps), ridge, p.Method, p.When)
}

// rooflineRows groups the passing, timed rows by their backend's device,
// devices in the order the run lists their backends.
func rooflineRows(run *results.Run) ([]sdk.Device, map[string][]*results.Result) {
	deviceOf := map[string]sdk.Device{}
	var devices []sdk.Device
	for _, b := range run.Backends {
		deviceOf[b.Name] = b.Device
	}
	rows := map[string][]*results.Result{}
	mode := run.PrimaryMode()
	for i := range run.Results {
		r := &run.Results[i]
		d, ok := deviceOf[r.Backend]
		if !ok || !report.Comparable(r, mode) {
			continue
		}
		if !slices.ContainsFunc(devices, func(x sdk.Device) bool { return x.Name == d.Name }) {
			devices = append(devices, d)
		}
		rows[d.Name] = append(rows[d.Name], r)
	}
	return devices, rows
}

func rooflineRow(run *results.Run, r *results.Result, p Peaks) []string {
	var flops, bytes float64
	for _, c := range run.Cases {
		if c.ID == r.CaseID {
			flops, bytes = c.FLOPs, c.Bytes
		}
	}
	cells := []string{r.CaseID, r.RowLabel(), cell.Missing, rateCell(r.Derived.TFLOPS), cell.Missing, rateCell(r.Derived.GBps), cell.Missing, cell.Missing, cell.Missing}
	if bytes <= 0 {
		return cells
	}
	intensity := flops / bytes
	cells[2] = cell.Sig3(intensity)
	if p.TFLOPS > 0 {
		cells[4] = percentCell(100 * r.Derived.TFLOPS / p.TFLOPS)
	}
	if p.GBps > 0 {
		cells[6] = percentCell(100 * r.Derived.GBps / p.GBps)
	}
	if p.TFLOPS > 0 && p.GBps > 0 {
		roof := min(p.TFLOPS, intensity*p.GBps/1e3)
		cells[7] = "memory"
		if intensity >= p.TFLOPS*1e3/p.GBps {
			cells[7] = "compute"
		}
		cells[8] = percentCell(100 * r.Derived.TFLOPS / roof)
	}
	return cells
}

// PeaksLine is a calibration in one line, for `flashcore calibrate`.
func PeaksLine(name string, p Peaks) string {
	return strings.TrimSpace(fmt.Sprintf("%s: %s TFLOP/s, %s GB/s (%s)", name, rateCell(p.TFLOPS), rateCell(p.GBps), p.Method))
}
