// Package runreport writes a results.Run for people and for other tools:
// a terminal table, GitHub Markdown, CSV, the run's own JSON, Go's
// benchmark format for benchstat, or one self-contained HTML page with
// the charts inline. It also draws the tables of the commands that read a
// run a particular way: gate (WriteGates), roofline (WriteRoofline) and
// ablate (WriteAblation).
//
// Where to start: Render. It arranges the run with report.NewView, then
// one writer per format turns the view into text: text.go for table and
// markdown, csv.go, benchfmt.go, html.go (with html.tmpl); cells.go
// formats the figures the tables add to package cell's. Every table is
// drawn by table.Draw.
package runreport
