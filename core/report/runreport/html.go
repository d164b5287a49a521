package runreport

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/flashcore/bench/core/report"
	"github.com/flashcore/bench/core/report/charts"
	"github.com/flashcore/bench/core/report/table"
)

// htmlPage is the HTML report's template: one file with its style
// inline and its charts as inline SVG, so that it opens from disk with no
// network (no CDN, no web fonts).
//
//go:embed html.tmpl
var htmlPage string

var htmlTemplate = template.Must(template.New("report").Parse(htmlPage))

// htmlTable is a grid ready for the template: each cell with its
// alignment class.
type htmlTable struct {
	Header []htmlCell
	Rows   [][]htmlCell
	Footer []htmlCell
}

type htmlCell struct {
	Text  string
	Class string // "num" for right-aligned numbers, "" otherwise
}

type htmlItem struct{ Key, Value string }

func htmlItems(items []item) []htmlItem {
	out := make([]htmlItem, len(items))
	for i, it := range items {
		out[i] = htmlItem{it.key, it.value}
	}
	return out
}

type htmlCase struct {
	ID, Details string
	Table       *htmlTable // nil when the case has no rows
	Notes       []string
}

type htmlFacet struct {
	Title  string
	Charts []htmlChart
}

type htmlChart struct {
	File, Title string
	SVG         template.HTML
}

type htmlData struct {
	Title          string
	Header         []htmlItem
	Facets         []htmlFacet
	SummaryCaption string
	Summary        htmlTable
	SummaryNotes   []string
	Cases          []htmlCase
}

// writeHTML writes the run as one self-contained HTML page: the header
// block, the charts drawn by charts.Draw, the summary and every case's table, all
// drawn from the same grids as the text tables.
func writeHTML(w io.Writer, v *report.View, drawn []charts.Chart) error {
	data := htmlData{
		Title:          "FlashCore bench results",
		Header:         htmlItems(headerItems(v, plainPath)),
		Facets:         htmlFacets(drawn),
		SummaryCaption: summaryCaption(v),
		Summary:        toHTMLTable(summaryGrid(v)),
		SummaryNotes:   summaryNotes(v),
	}
	if v.Run.Suite.Name != "" {
		data.Title += ": " + v.Run.Suite.Name
	}
	for _, c := range v.Cases {
		hc := htmlCase{ID: c.ID, Details: caseDetails(c, " · ", plainPath), Notes: c.Notes}
		if len(c.Rows) > 0 {
			t := toHTMLTable(caseGrid(v, c))
			hc.Table = &t
		}
		data.Cases = append(data.Cases, hc)
	}
	var out bytes.Buffer
	if err := htmlTemplate.Execute(&out, data); err != nil {
		return fmt.Errorf("report: html: %w", err)
	}
	_, err := w.Write(out.Bytes())
	return err
}

// htmlFacets groups the charts by facet, in the order charts.Draw drew them:
// each facet's title is what follows the measure in the chart titles.
func htmlFacets(drawn []charts.Chart) []htmlFacet {
	var facets []htmlFacet
	for _, c := range drawn {
		_, facetTitle, _ := strings.Cut(c.Title, ", ")
		if len(facets) == 0 || facets[len(facets)-1].Title != facetTitle {
			facets = append(facets, htmlFacet{Title: facetTitle})
		}
		f := &facets[len(facets)-1]
		f.Charts = append(f.Charts, htmlChart{File: c.File, Title: c.Title, SVG: inlineSVG(c.SVG)})
	}
	return facets
}

// inlineSVG drops the XML declaration and comment in front of the <svg>
// element, which may not appear inside an HTML page. The SVG is our own,
// drawn by gonum/plot from escaped text, so it is trusted as HTML.
func inlineSVG(svg []byte) template.HTML {
	s := string(svg)
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	return template.HTML(s)
}

func toHTMLTable(g table.Grid) htmlTable {
	cells := func(texts []string) []htmlCell {
		out := make([]htmlCell, len(texts))
		for i, t := range texts {
			out[i] = htmlCell{Text: t}
			if g.RightAligned(i) {
				out[i].Class = "num"
			}
		}
		return out
	}
	t := htmlTable{Header: cells(g.Header), Footer: cells(g.Footer)}
	for _, r := range g.Rows {
		t.Rows = append(t.Rows, cells(r))
	}
	return t
}
