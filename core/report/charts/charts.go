// Package charts draws a run's charts as SVG with gonum/plot: for each
// facet of a charted op's cases (the op declares its chart and facets:
// attention's are head dim, dtype, causal, grouping of heads), kernel
// time, TFLOP/s and the speedup over the baseline against the op's X axis
// (attention's sequence length). `flashcore plot` saves them as files and the HTML run
// report inlines them.
//
// Where to start: Draw.
package charts

import (
	"bytes"
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
)

// Chart is one drawn chart: the file it is saved as, what it shows, and
// its SVG.
type Chart struct {
	// File is the chart's file name: "time-d128-fp16-causal.svg".
	File string
	// Title is what it shows, for the HTML report's headings.
	Title string
	SVG   []byte
}

// chartWidth and chartHeight are the size of every chart; the legend
// takes legendWidth on the right, outside the plot, so that no line hides
// behind it.
const (
	chartWidth  = 8 * vg.Inch
	chartHeight = 5 * vg.Inch
	legendWidth = 1.6 * vg.Inch
)

// chartFont is the face of every chart's text: Liberation Sans, which
// gonum/plot carries with it, so that text is measured the same on every
// machine.
var chartFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

// facet is one panel of the charts: the cases of one op that share the
// op's facet, so that only the op's X axis varies along a line.
type facet struct {
	op    string
	chart op.Chart
	op.Facet
}

// facetOf is the panel of a case; ok is false for a case the charts leave
// out.
func facetOf(c *results.Case) (facet, bool) {
	if c == nil {
		return facet{}, false
	}
	chart, f, ok := ops.ChartOf(c.OpName(), c.Params)
	return facet{op: c.OpName(), chart: chart, Facet: f}, ok
}

// xOf is a case's place along its facet's x axis.
func xOf(c *results.Case, f facet) int {
	return op.Params(c.Params).Int(f.chart.X)
}

// in reports whether case c is drawn in facet f.
func in(c *results.Case, f facet) bool {
	g, ok := facetOf(c)
	return ok && g.op == f.op && g.Name == f.Name
}

// measure is one kind of chart: what its y axis shows, read from a row.
type measure struct {
	file, title, axis string
	logY              bool
	value             func(v *report.View, r report.Row) (float64, bool)
}

var measures = []measure{
	{"time", "Kernel time", "Kernel time (µs, median)", true, kernelMicros},
	{"tflops", "Throughput", "TFLOP/s", false, tflops},
	{"speedup", "Speedup", "Speedup (×)", true, speedup},
}

func kernelMicros(v *report.View, r report.Row) (float64, bool) {
	t, ok := r.TimingFor(v.Primary)
	if !ok || t.Kernel.N == 0 || !(t.Kernel.MedianNs > 0) {
		return 0, false
	}
	return t.Kernel.MedianNs / 1e3, true
}

func tflops(v *report.View, r report.Row) (float64, bool) {
	if _, ok := r.TimingFor(v.Primary); !ok || !(r.Derived.TFLOPS > 0) {
		return 0, false
	}
	return r.Derived.TFLOPS, true
}

func speedup(_ *report.View, r report.Row) (float64, bool) {
	return r.Speedup, r.Speedup > 0 && !math.IsInf(r.Speedup, 0)
}

// Draw draws the charts of v: for each facet (head dim, dtype, causal),
// kernel time, TFLOP/s and the speedup over v's baseline against the
// sequence length, one line per row label. Only rows that passed their
// check are drawn: a wrong result has no speed. Every chart names the
// device and the date of the run.
func Draw(v *report.View) ([]Chart, error) {
	facets := facetsOf(v)
	names := rowNames(v)
	var charts []Chart
	for _, f := range facets {
		for _, m := range measures {
			if m.file == "speedup" && v.Baseline.Backend == "" {
				continue
			}
			svg, drawn, err := drawChart(v, f, m, names)
			if err != nil {
				return nil, fmt.Errorf("chart %s of %s: %w", m.file, f.Name, err)
			}
			if drawn {
				charts = append(charts, Chart{File: m.file + "-" + f.Name + ".svg", Title: m.title + ", " + f.Title, SVG: svg})
			}
		}
	}
	return charts, nil
}

// facetsOf lists the facets of the run's cases, in the order of their op
// and then of the op's facets.
func facetsOf(v *report.View) []facet {
	var facets []facet
	for _, c := range v.Cases {
		f, ok := facetOf(c.Info)
		if ok && !slices.ContainsFunc(facets, func(g facet) bool { return g.op == f.op && g.Name == f.Name }) {
			facets = append(facets, f)
		}
	}
	slices.SortFunc(facets, func(a, b facet) int { return cmp.Or(cmp.Compare(a.op, b.op), cmp.Compare(a.Order, b.Order)) })
	return facets
}

// rowNames lists every row name in the order of first appearance, so
// that a row keeps its colour and marker on every chart.
func rowNames(v *report.View) []string {
	var names []string
	for _, c := range v.Cases {
		for _, r := range c.Rows {
			if !slices.Contains(names, r.Name) {
				names = append(names, r.Name)
			}
		}
	}
	return names
}

// series gathers one row name's points in a facet, by sequence length.
func series(v *report.View, f facet, m measure, name string) plotter.XYs {
	var pts plotter.XYs
	for _, c := range v.Cases {
		if !in(c.Info, f) {
			continue
		}
		for _, r := range c.Rows {
			if r.Name != name || r.Status != results.StatusPass {
				continue
			}
			if y, ok := m.value(v, r); ok {
				pts = append(pts, plotter.XY{X: float64(xOf(c.Info, f)), Y: y})
			}
		}
	}
	slices.SortStableFunc(pts, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
	return pts
}

// drawChart draws one measure of one facet; drawn is false when no row
// has a point there.
func drawChart(v *report.View, f facet, m measure, names []string) (svg []byte, drawn bool, err error) {
	p := plot.New()
	useChartFont(p)
	p.Title.Text = m.title + ", " + f.Title + "\n" + chartSubtitle(v)
	p.X.Label.Text = f.chart.XLabel
	p.Y.Label.Text = m.axis
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = xTicks(v, f)
	if m.logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.TickerFunc(logTicks)
	} else {
		p.Y.Min = 0 // a rate starts at nothing, so heights compare
		p.Y.Tick.Marker = plot.TickerFunc(linearTicks)
	}
	p.Add(plotter.NewGrid())
	legend := plot.NewLegend()
	legend.TextStyle.Font = font.From(chartFont, legend.TextStyle.Font.Size)
	legend.Top = true
	legend.Left = true
	for i, name := range names {
		pts := plottable(series(v, f, m, name), m.logY)
		if len(pts) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, false, err
		}
		styleSeries(line, points, i)
		p.Add(line, points)
		legend.Add(name, line, points)
		drawn = true
	}
	if !drawn {
		return nil, false, nil
	}
	if m.file == "speedup" {
		addBaselineRule(p, v)
	}
	widenLogAxis(&p.X)
	if m.logY {
		widenLogAxis(&p.Y)
	}
	return renderSVG(p, legend)
}

// plottable drops the points a chart cannot place: values that are not
// finite, and on a log scale those that are not positive (a speedup of
// nothing, a row whose baseline is missing).
func plottable(pts plotter.XYs, logY bool) plotter.XYs {
	return slices.DeleteFunc(pts, func(p plotter.XY) bool {
		bad := func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }
		return bad(p.X) || bad(p.Y) || p.X <= 0 || (logY && p.Y <= 0)
	})
}

// widenLogAxis gives a log axis a range it can draw: positive, and wider
// than one value (a chart with one point, or one sequence length, has
// Min == Max, which a log scale cannot divide).
func widenLogAxis(a *plot.Axis) {
	if !(a.Min > 0) {
		a.Min = math.Min(a.Max/10, 1)
	}
	if !(a.Max > a.Min) {
		a.Min, a.Max = a.Min/2, a.Min*2
	}
}

// useChartFont sets chartFont on every text of p, keeping the sizes
// gonum/plot chose; plot.DefaultFont, a global, is left alone.
func useChartFont(p *plot.Plot) {
	for _, style := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle,
		&p.X.Tick.Label, &p.Y.Tick.Label} {
		style.Font = font.From(chartFont, style.Font.Size)
	}
}

// chartSubtitle is the device, date and suite of the run.
func chartSubtitle(v *report.View) string {
	parts := []string{report.DeviceLine(v.Run.Environment)}
	if !v.Run.StartedAt.IsZero() {
		parts = append(parts, v.Run.StartedAt.UTC().Format("2006-01-02"))
	}
	if v.Run.Suite.Name != "" {
		parts = append(parts, "suite "+v.Run.Suite.Name)
	}
	parts = append(parts, "L2 "+string(v.Primary))
	return strings.Join(parts, " · ")
}

// xTicks marks the facet's values of its X axis.
func xTicks(v *report.View, f facet) plot.Ticker {
	var ticks plot.ConstantTicks
	for _, c := range v.Cases {
		if !in(c.Info, f) {
			continue
		}
		n := xOf(c.Info, f)
		x := float64(n)
		if !slices.ContainsFunc(ticks, func(t plot.Tick) bool { return t.Value == x }) {
			ticks = append(ticks, plot.Tick{Value: x, Label: strconv.Itoa(n)})
		}
	}
	return ticks
}

// palette is Tableau's ten colours, told apart more easily than
// plotutil's seven when a chart has ten rows.
var palette = []color.RGBA{
	{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff},
	{0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff}, {0xe3, 0x77, 0xc2, 0xff}, {0x7f, 0x7f, 0x7f, 0xff},
	{0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
}

// styleSeries gives row i its colour, marker and dash pattern; the ten
// colours repeat with other dashes.
func styleSeries(line *plotter.Line, points *plotter.Scatter, i int) {
	c := palette[i%len(palette)]
	line.Color = c
	line.Width = vg.Points(1.5)
	line.Dashes = plotutil.Dashes(i / len(palette))
	points.Color = c
	points.Shape = plotutil.Shape(i)
	points.Radius = vg.Points(3)
}

// addBaselineRule draws the baseline's 1× as a grey line.
func addBaselineRule(p *plot.Plot, v *report.View) {
	rule := plotter.NewFunction(func(float64) float64 { return 1 })
	rule.Color = color.Gray{Y: 128}
	rule.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(rule)
	p.Y.Label.Text = "Speedup over " + v.Baseline.Backend + " (×)"
}

// linearTicks marks a linear axis every 1, 2 or 5 times a power of ten,
// whichever gives four to ten labelled ticks.
func linearTicks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	step := math.Pow(10, math.Floor(math.Log10(hi-lo)))
	for _, m := range []float64{0.1, 0.2, 0.5, 1, 2, 5} {
		if (hi-lo)/(step*m) <= 10 {
			step *= m
			break
		}
	}
	var ticks []plot.Tick
	for i := math.Ceil(lo / step); i*step <= hi+step*1e-9; i++ {
		x := i * step
		ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', 10, 64)})
	}
	return ticks
}

// logTicks marks a log axis at 1, 2 and 5 times each power of ten, with
// labels on those within the range; a narrow range (speedups from 0.3 to
// 1.2) then still reads.
func logTicks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) {
		return nil
	}
	var ticks []plot.Tick
	for exp := math.Floor(math.Log10(lo)); exp <= math.Ceil(math.Log10(hi)); exp++ {
		for _, m := range []float64{1, 2, 5} {
			x := m * math.Pow(10, exp)
			if x >= lo*0.999 && x <= hi*1.001 {
				ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'f', -1, 64)})
			}
		}
	}
	return ticks
}

// renderSVG draws the plot on the left and the legend on the right.
func renderSVG(p *plot.Plot, legend plot.Legend) (svg []byte, drawn bool, err error) {
	defer func() {
		// gonum/plot panics on ranges it cannot draw; a chart it cannot
		// draw is an error for that chart, never a crash of the command.
		if r := recover(); r != nil {
			svg, drawn, err = nil, false, fmt.Errorf("draw chart %q: %v", p.Title.Text, r)
		}
	}()
	canvas := vgsvg.New(chartWidth, chartHeight)
	dc := draw.New(canvas)
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	legend.Draw(draw.Crop(dc, chartWidth-legendWidth+vg.Points(6), 0, 0, -vg.Points(48)))
	var out bytes.Buffer
	if _, err := canvas.WriteTo(&out); err != nil {
		return nil, false, err
	}
	return out.Bytes(), true, nil
}
