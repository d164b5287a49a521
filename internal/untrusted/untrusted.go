// Package untrusted makes text that a plugin supplied safe to show: a
// name, a version, a device name, a reason, a fact. Plugins are other
// people's code, and what they say reaches terminals, Markdown, HTML and
// CSV files and the results file. Start at Text and Line, which the host
// applies as each response enters it (sdk.Client); Markdown and CSVCell
// are for the renderers.
package untrusted

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxReason is how much of a reason a table or the results file keeps; the
// whole text goes to a file the row names.
const MaxReason = 4 << 10

// Text keeps newlines and tabs and drops every other control character
// (terminal escapes among them), the Unicode format characters that
// reorder or hide text (bidirectional overrides, zero-width joiners) and
// invalid UTF-8.
func Text(s string) string {
	if clean(s, true) {
		return s
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "") {
		if keep(r, true) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Line is Text on one line: newlines and tabs become spaces.
func Line(s string) string {
	if clean(s, false) {
		return s
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "") {
		switch {
		case r == '\n' || r == '\t' || r == '\r':
			b.WriteByte(' ')
		case keep(r, false):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func clean(s string, multiline bool) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !keep(r, multiline) {
			return false
		}
	}
	return true
}

func keep(r rune, multiline bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return multiline
	case unicode.IsControl(r): // C0, DEL and C1, ESC and CSI among them
		return false
	case unicode.Is(unicode.Cf, r): // format: bidi overrides, zero-width
		return false
	}
	return true
}

// Cap cuts s to at most limit bytes on a rune boundary, saying how much
// was cut; truncated reports whether it did.
func Cap(s string, limit int) (capped string, truncated bool) {
	if len(s) <= limit {
		return s, false
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… [" + itoa(len(s)-cut) + " more bytes]", true
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}

// Markdown escapes text for a Markdown document: HTML's special
// characters become entities, so no tag a plugin writes is ever markup,
// and a "|" cannot end a table cell.
func Markdown(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '|':
			b.WriteString(`\|`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// CSVCell guards a cell against formula injection: a spreadsheet runs a
// cell that starts with =, +, -, @ (or a tab or carriage return before
// one) as a formula, so such a cell gets a leading apostrophe. Numbers,
// negative ones included, are left as they are.
func CSVCell(s string) string {
	if s == "" || !strings.ContainsRune("=+-@\t\r", rune(s[0])) || isNumber(s) {
		return s
	}
	return "'" + s
}

func isNumber(s string) bool {
	digits := false
	for i, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits = true
		case (r == '-' || r == '+') && (i == 0 || s[i-1] == 'e' || s[i-1] == 'E'):
		case r == '.' || r == 'e' || r == 'E':
		default:
			return false
		}
	}
	return digits
}
