// Package table draws every table flashcore prints, with tablewriter: a
// boxed table for a terminal, or a GitHub Markdown table. The run report,
// the comparison, gate, roofline, ablation, tune and Nsight Compute
// tables all come through Draw, so that they look alike.
//
// Where to start: Grid, then Draw.
package table

import (
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/flashcore/bench/internal/untrusted"
)

// Left and Right are a column's alignment, for Column: text to the left,
// numbers to the right.
const (
	Left  = false
	Right = true
)

// Grid is one table before it is drawn: the same for a terminal and for
// Markdown.
type Grid struct {
	Header []string
	// Right marks the columns aligned right (numbers); the others, and
	// columns past its end, are aligned left.
	Right  []bool
	Rows   [][]string
	Footer []string // nil for none
}

// Column adds a column titled title, aligned right when right is true.
func (g *Grid) Column(title string, right bool) {
	g.Header = append(g.Header, title)
	g.Right = append(g.Right, right)
}

// RightAligned says whether column i is aligned right.
func (g Grid) RightAligned(i int) bool { return i < len(g.Right) && g.Right[i] }

// Draw writes g as a boxed terminal table, or as a GitHub Markdown table
// with every cell escaped (a "|" in a cell does not end it, and a tag a
// plugin wrote in a name or reason is no markup).
func Draw(w io.Writer, g Grid, markdown bool) error {
	align := make([]tw.Align, len(g.Header))
	for i := range align {
		align[i] = tw.AlignLeft
		if g.RightAligned(i) {
			align[i] = tw.AlignRight
		}
	}
	opts := []tablewriter.Option{
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: align}),
		tablewriter.WithFooterAutoWrap(tw.WrapNone),
		tablewriter.WithFooterAlignmentConfig(tw.CellAlignment{PerColumn: align}),
	}
	if markdown {
		opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()))
		g = escapeMarkdown(g)
	}
	t := tablewriter.NewTable(w, opts...)
	t.Header(anys(g.Header)...)
	for _, r := range g.Rows {
		if err := t.Append(anys(r)...); err != nil {
			return err
		}
	}
	if g.Footer != nil {
		t.Footer(anys(g.Footer)...)
	}
	return t.Render()
}

// escapeMarkdown keeps a "|" inside a cell from ending it, and any tag a
// plugin wrote in a name or reason from being markup.
func escapeMarkdown(g Grid) Grid {
	escape := func(cells []string) []string {
		out := make([]string, len(cells))
		for i, c := range cells {
			out[i] = untrusted.Markdown(c)
		}
		return out
	}
	e := Grid{Header: escape(g.Header), Right: g.Right}
	for _, r := range g.Rows {
		e.Rows = append(e.Rows, escape(r))
	}
	if g.Footer != nil {
		e.Footer = escape(g.Footer)
	}
	return e
}

func anys(cells []string) []any {
	out := make([]any, len(cells))
	for i, c := range cells {
		out[i] = c
	}
	return out
}
