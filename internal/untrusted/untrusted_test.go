package untrusted

import (
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	tests := []struct{ name, in, text, line string }{
		{"plain", "cuda-v8 1.0", "cuda-v8 1.0", "cuda-v8 1.0"},
		{"escape", "ok\x1b[31mred\x1b[0m", "ok[31mred[0m", "ok[31mred[0m"},
		{"osc title", "a\x1b]0;pwned\x07b", "a]0;pwnedb", "a]0;pwnedb"},
		{"c1 csi", "a\u009b31mb", "a31mb", "a31mb"},
		{"newlines", "line 1\nline 2\ttab\r", "line 1\nline 2\ttab", "line 1 line 2 tab "},
		{"bidi", "abc\u202edcba\u2066x\u200d", "abcdcbax", "abcdcbax"},
		{"invalid utf-8", "a\xffb", "ab", "ab"},
		{"unicode kept", "µs ±0.1% 0.5× —", "µs ±0.1% 0.5× —", "µs ±0.1% 0.5× —"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Text(tt.in); got != tt.text {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.text)
			}
			if got := Line(tt.in); got != tt.line {
				t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.line)
			}
		})
	}
}

func TestCap(t *testing.T) {
	s := strings.Repeat("é", 10) // 20 bytes
	got, cut := Cap(s, 5)
	if !cut || got != "éé… [16 more bytes]" {
		t.Errorf("Cap = %q %v", got, cut)
	}
	if got, cut := Cap("short", 10); cut || got != "short" {
		t.Errorf("Cap(short) = %q %v", got, cut)
	}
}

func TestMarkdownAndCSV(t *testing.T) {
	if got := Markdown(`<script>alert(1)</script> a|b & c`); got != `&lt;script&gt;alert(1)&lt;/script&gt; a\|b &amp; c` {
		t.Errorf("Markdown = %q", got)
	}
	for in, want := range map[string]string{
		"=HYPERLINK(\"x\")": "'=HYPERLINK(\"x\")", "+1+2": "'+1+2", "@SUM(A1)": "'@SUM(A1)", "-cmd|x": "'-cmd|x",
		"-1.5": "-1.5", "+3e-4": "+3e-4", "1e+09": "1e+09", "cuda-v8": "cuda-v8", "": "", "\t=1": "'\t=1",
	} {
		if got := CSVCell(in); got != want {
			t.Errorf("CSVCell(%q) = %q, want %q", in, got, want)
		}
	}
}
