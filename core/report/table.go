package report

import (
	"io"

	"github.com/flashcore/bench/core/report/cell"
	"github.com/olekukonko/tablewriter/tw"
)

// Table is a table of another command (verify-timing, profile), drawn the
// way the results tables are, so every table flashcore prints looks alike.
type Table struct {
	Header []string
	// Right marks the columns aligned right (numbers).
	Right []bool
	Rows  [][]string
}

// DrawTable writes t as a terminal table, or as GitHub Markdown.
func DrawTable(w io.Writer, t Table, markdown bool) error {
	g := grid{header: t.Header, rows: t.Rows}
	for i := range t.Header {
		align := tw.AlignLeft
		if i < len(t.Right) && t.Right[i] {
			align = tw.AlignRight
		}
		g.align = append(g.align, align)
	}
	return drawGrid(w, g, markdown)
}

// Duration writes a time in nanoseconds as the results tables do: three
// significant digits, in µs, ms or s; "—" when it is cell.Missing.
func Duration(ns float64) string { return cell.Duration(ns) }

// Missing is what fills a cell that has no figure.
const Missing = cell.Missing
