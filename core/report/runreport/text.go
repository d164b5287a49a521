package runreport

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/report/cell"
	"github.com/flashcore/bench/core/report/table"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/core/stats"
	"github.com/flashcore/bench/internal/untrusted"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/ops/attention"
	"github.com/flashcore/bench/ops/mask"
	"github.com/flashcore/bench/sdk"
)

// item is one line of the header block.
type item struct{ key, value string }

func writeTable(w io.Writer, v *report.View) error {
	var out bytes.Buffer
	out.WriteString("FlashCore bench results\n")
	for _, it := range headerItems(v, plainPath) {
		fmt.Fprintf(&out, "  %-9s %s\n", it.key, it.value)
	}
	for _, c := range v.Cases {
		title := c.ID
		if details := caseDetails(c, "  ·  ", plainPath); details != "" {
			title += "  ·  " + details
		}
		fmt.Fprintf(&out, "\n%s\n", title)
		if err := writeCaseBody(&out, v, c, false); err != nil {
			return err
		}
	}
	fmt.Fprintf(&out, "\nSummary  ·  %s\n", summaryCaption(v))
	if err := table.Draw(&out, summaryGrid(v), false); err != nil {
		return err
	}
	writeNotes(&out, summaryNotes(v), "  note: ")
	_, err := w.Write(out.Bytes())
	return err
}

func writeMarkdown(w io.Writer, v *report.View) error {
	var out bytes.Buffer
	fmt.Fprintf(&out, "## FlashCore bench results: %s\n\n", v.Run.Suite.Name)
	for _, it := range headerItems(v, codePath) {
		fmt.Fprintf(&out, "- **%s:** %s\n", it.key, markdownValue(it.value))
	}
	for _, c := range v.Cases {
		fmt.Fprintf(&out, "\n### %s\n\n", c.ID)
		if err := writeCaseBody(&out, v, c, true); err != nil {
			return err
		}
	}
	fmt.Fprintf(&out, "\n### Summary\n\n%s.\n\n", summaryCaption(v))
	if err := table.Draw(&out, summaryGrid(v), true); err != nil {
		return err
	}
	writeNotes(&out, summaryNotes(v), "\n> Note: ")
	_, err := w.Write(out.Bytes())
	return err
}

// writeCaseBody writes a case's table and notes; markdown also gets the
// shape line that the terminal title holds.
func writeCaseBody(out *bytes.Buffer, v *report.View, c report.Case, markdown bool) error {
	if details := caseDetails(c, " · ", codePath); markdown && details != "" {
		fmt.Fprintf(out, "%s\n\n", details)
	}
	if len(c.Rows) == 0 {
		out.WriteString("(no rows)\n")
		return nil
	}
	if err := table.Draw(out, caseGrid(v, c), markdown); err != nil {
		return err
	}
	prefix, notes := "  note: ", c.Notes
	if markdown {
		prefix, notes = "\n> Note: ", mapStrings(notes, untrusted.Markdown)
	}
	writeNotes(out, notes, prefix)
	return nil
}

func writeNotes(out *bytes.Buffer, notes []string, prefix string) {
	for _, n := range notes {
		out.WriteString(prefix + n + "\n")
	}
}

// plainPath and codePath quote a file path for each format.
func plainPath(p string) string { return p }
func codePath(p string) string  { return "`" + p + "`" }

// headerItems are the lines of the header block; lines the run has no
// value for are left out.
func headerItems(v *report.View, quote func(string) string) []item {
	run := v.Run
	all := []item{
		{"Suite", suiteLine(run.Suite, quote)},
		{"Started", startedLine(run)},
		{"Status", statusLine(run)},
		{"Tool", report.ToolLine(run.Tool)},
		{"Host", hostLine(run.Environment)},
		{"Devices", devicesLine(run.Environment)},
		{"Isolation", strings.TrimPrefix(run.Environment.Isolation, "isolation: ")},
		{"Timing audit", run.Environment.TimingAudit},
		{"GPUs", rowGPUsLine(v.GPUs)},
		{"Baseline", baselineLine(v.Baseline)},
		{"Timing", timingLine(v)},
		{"Not run", unavailableLine(run.Backends)},
	}
	var items []item
	for _, it := range all {
		if it.value != "" {
			items = append(items, it)
		}
	}
	return items
}

// unavailableLine names the backends that were found but could not run on
// this machine, each with its reason, so a missing row is never a mystery.
func unavailableLine(backends []results.Backend) string {
	var parts []string
	for _, b := range backends {
		if !b.Available {
			parts = append(parts, fmt.Sprintf("%s (%s)", b.Name, b.UnavailableReason))
		}
	}
	return strings.Join(parts, "; ")
}

func suiteLine(s results.Suite, quote func(string) string) string {
	if s.Name == "" {
		return ""
	}
	line := s.Name
	if s.Path != "" {
		line += " (" + quote(s.Path) + ")"
	}
	return fmt.Sprintf("%s, seed %d", line, s.Seed)
}

func startedLine(run *results.Run) string {
	if run.StartedAt.IsZero() {
		return ""
	}
	line := run.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC")
	if !run.FinishedAt.IsZero() {
		line += ", took " + run.FinishedAt.Sub(run.StartedAt).Round(time.Second).String()
	}
	return line
}

func statusLine(run *results.Run) string {
	switch run.Status {
	case results.RunComplete:
		return run.Status
	case "":
		return ""
	}
	rows := "rows"
	if len(run.Results) == 1 {
		rows = "row"
	}
	return fmt.Sprintf("%s: the tables hold the %d %s done", run.Status, len(run.Results), rows)
}

func hostLine(e results.Environment) string {
	var parts []string
	if e.OS != "" {
		parts = append(parts, e.OS+"/"+e.Arch)
	}
	if e.CPU != "" {
		parts = append(parts, e.CPU)
	}
	if e.Cores > 0 {
		parts = append(parts, fmt.Sprintf("%d cores", e.Cores))
	}
	line := strings.Join(parts, ", ")
	if e.Host != "" && line != "" {
		return e.Host + ": " + line
	}
	return e.Host + line
}

func devicesLine(e results.Environment) string {
	if len(e.GPUs) == 0 {
		return "no GPU"
	}
	var gpus []string
	for _, d := range e.GPUs {
		gpus = append(gpus, gpuName(d))
	}
	line := strings.Join(gpus, "; ")
	if e.Driver != "" {
		line += ", driver " + e.Driver
	}
	if e.CUDA != "" {
		line += ", CUDA " + e.CUDA
	}
	return line
}

// rowGPUsLine names the GPUs of a run spread over several: the GPU
// column's index, the model and the UUID.
func rowGPUsLine(gpus []results.RowDevice) string {
	var parts []string
	for _, g := range gpus {
		parts = append(parts, fmt.Sprintf("%d: %s (%s)", g.Index, g.Name, g.UUID))
	}
	return strings.Join(parts, "; ")
}

func gpuCell(r *results.Result) string {
	if r.Device == nil {
		return cell.Missing
	}
	return strconv.Itoa(r.Device.Index)
}

func gpuName(d sdk.Device) string {
	var details []string
	if d.ComputeCapability != "" {
		details = append(details, "cc "+d.ComputeCapability)
	}
	if d.Multiprocessors > 0 {
		details = append(details, fmt.Sprintf("%d SMs", d.Multiprocessors))
	}
	if len(details) == 0 {
		return d.Name
	}
	return fmt.Sprintf("%s (%s)", d.Name, strings.Join(details, ", "))
}

func baselineLine(b report.Baseline) string {
	switch {
	case b.Note == "":
		return b.Backend
	case b.Backend == "":
		return "none (" + b.Note + ")"
	}
	return fmt.Sprintf("%s (%s)", b.Backend, b.Note)
}

func timingLine(v *report.View) string {
	line := fmt.Sprintf("Kernel = median device time, host launch gaps excluded, L2 %s", v.Primary)
	for _, m := range v.Extra {
		line += fmt.Sprintf("; %s = the same with L2 %s", modeTitle(m), m)
	}
	if v.CrossChecked {
		line += "; Cross-check = an independent kernel time by a second method where the backend has one (Python bridges: events+sleep where Kernel is CUPTI, CUPTI where it is events+sleep)"
	}
	return line + "; Call = host-inclusive median"
}

// modeTitle is the column title of an extra L2 mode: "Cold".
func modeTitle(m sdk.L2Mode) string {
	s := string(m)
	if s == "" {
		return "?"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// caseDetails is the shape and the short input hash of a case: "B1 H8
// S512 D64 fp16 · input 1f1f1f1f1f1f"; "" when the run does not list it.
func caseDetails(c report.Case, sep string, quote func(string) string) string {
	if c.Info == nil {
		return ""
	}
	return caseLabel(*c.Info) + sep + "input " + quote(shortHash(c.Info.InputSHA256))
}

func caseGrid(v *report.View, c report.Case) table.Grid {
	var g table.Grid
	g.Column("Backend", table.Left)
	if v.GPUs != nil {
		g.Column("GPU", table.Right)
	}
	g.Column("Kernel", table.Right)
	for _, m := range v.Extra {
		g.Column(modeTitle(m), table.Right)
	}
	if v.CrossChecked {
		g.Column("Cross-check", table.Right)
	}
	bandwidth := c.Info != nil && caseRoof(*c.Info) == op.BandwidthRoof
	rate := "TFLOP/s"
	switch {
	case bandwidth:
		rate = "GB/s"
	case c.Info != nil:
		if note := ops.WorkNote(c.Info.OpName(), c.Info.Params); note != "" {
			rate += " (" + note + ")"
		}
	}
	for _, title := range []string{"Call", "Speedup", rate, "% peak", "Rel err"} {
		g.Column(title, table.Right)
	}
	g.Column("Verdict", table.Left)
	for _, r := range c.Rows {
		g.Rows = append(g.Rows, caseRow(v, r, bandwidth))
	}
	return g
}

// caseRoof is the roof a case's op is held against: its throughput column
// is TFLOP/s for compute-bound ops and GB/s for bandwidth-bound ones.
func caseRoof(c results.Case) op.Roof {
	if o, err := ops.Lookup(c.OpName()); err == nil {
		return o.Spec().Roof
	}
	return op.ComputeRoof
}

func caseRow(v *report.View, r report.Row, bandwidth bool) []string {
	primary, timed := r.TimingFor(v.Primary)
	cells := []string{r.Name}
	if v.GPUs != nil {
		cells = append(cells, gpuCell(r.Result))
	}
	kernel := cell.Missing
	if timed {
		kernel = kernelCell(primary.Kernel)
	}
	cells = append(cells, kernel)
	for _, m := range v.Extra {
		cells = append(cells, extraCell(r.Result, m))
	}
	if v.CrossChecked {
		cross := cell.Missing
		if timed && primary.CrossCheck != nil {
			cross = medianCell(*primary.CrossCheck)
		}
		cells = append(cells, cross)
	}
	call := cell.Missing
	if timed {
		call = medianCell(primary.Call)
	}
	derived := r.Derived
	if !timed {
		derived = results.Derived{}
	}
	rate, peak := derived.TFLOPS, derived.PctPeakTFLOPS
	if bandwidth {
		rate, peak = derived.GBps, derived.PctPeakGBps
	}
	return append(cells, call, cell.Ratio(r.Speedup), rateCell(rate),
		percentCell(peak), relErrCell(r.Check), verdictCell(r.Result))
}

func extraCell(r *results.Result, m sdk.L2Mode) string {
	t, ok := r.TimingFor(m)
	if !ok {
		return cell.Missing
	}
	return medianCell(t.Kernel)
}

func summaryCaption(v *report.View) string {
	if v.Baseline.Backend == "" {
		return "no speedups: no baseline passed a case"
	}
	return fmt.Sprintf("speedup = geometric mean over the cases where both the row and %s passed", v.Baseline.Backend)
}

func summaryNotes(v *report.View) []string {
	if v.Baseline.Note == "" {
		return nil
	}
	return []string{v.Baseline.Note}
}

func summaryGrid(v *report.View) table.Grid {
	var g table.Grid
	g.Column("Backend", table.Left)
	g.Column("Speedup", table.Right)
	g.Column("Cases compared", table.Right)
	for _, title := range []string{"Pass", "Fail", "Skip", "Error"} {
		g.Column(title, table.Right)
	}
	for _, s := range v.Summary {
		g.Rows = append(g.Rows, append([]string{s.Label, cell.Ratio(stats.GeoMean(s.Speedups)),
			fmt.Sprint(len(s.Speedups))}, countCells(s.Counts)...))
	}
	g.Footer = append([]string{"Total", "", ""}, countCells(report.Total(v.Summary))...)
	return g
}

func countCells(c report.Counts) []string {
	return []string{fmt.Sprint(c.Pass), fmt.Sprint(c.Fail), fmt.Sprint(c.Skip), fmt.Sprint(c.Errored)}
}

func mapStrings(in []string, f func(string) string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = f(s)
	}
	return out
}

// markdownValue escapes a header value for Markdown, leaving the
// `code spans` the header quotes paths in as they are.
func markdownValue(v string) string {
	parts := strings.Split(v, "`")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = untrusted.Markdown(parts[i])
	}
	return strings.Join(parts, "`")
}

// caseLabel is a case as tables show it: its op's label of its params,
// such as "B1 H8 S512 D64 fp16" or "rmsnorm 4096x8192 bf16". An attention
// case's is its shape's, as files before ops recorded it, and its masks.
func caseLabel(c results.Case) string {
	if c.OpName() == attention.Name {
		return c.Shape.String() + mask.LabelSuffix(c.Params)
	}
	return ops.Label(c.Op, c.Params)
}
