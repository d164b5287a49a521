// Package tomlpos finds the line of a key in a TOML document, which the
// TOML decoder keeps to itself: every suite, tuned-configuration and CUDA
// spec error names the file, the line and the key with it.
package tomlpos

import (
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Lines says on which line a key is set. BurntSushi/toml v1.6 keeps key
// positions private (they reach users only inside its own errors), and it
// keeps one position per key of an array of tables, the last one; an error in
// the first [[cases]] entry would point at the last. So this package// reads the lines itself. It understands as much TOML as that needs: table
// and array-of-tables headers, key = value lines with bare, quoted and dotted
// keys, comments, and arrays, inline tables and multi-line strings that
// continue over several lines. The file has already parsed when this runs.
type Lines struct {
	records []keyRecord
}

// keyRecord is one key set in the file. Entry is the index of the
// top-level array-of-tables entry ([[sweeps]], [[cases]], [[backends]]) the
// key belongs to, or -1 outside such an entry.
type keyRecord struct {
	key   string
	entry int
	line  int
}

// Find returns the line that sets key inside entry (any entry when entry is
// negative). A key that is not in the file, such as a required key left
// out, is looked for in its table instead. It returns 0 when nothing
// matches.
func (k *Lines) Find(key string, entry int) int {
	for {
		for _, r := range k.records {
			if r.key == key && (entry < 0 || r.entry == entry) {
				return r.line
			}
		}
		dot := strings.LastIndexByte(key, '.')
		if dot < 0 {
			return 0
		}
		key = key[:dot]
	}
}

// KeyLine returns the line of doc, a TOML document that parses, that sets
// key (dotted, as in "kernels.grid") inside the entry-th entry of its
// top-level array of tables (any entry when entry is negative), or 0.
// Other TOML files a suite points to (a CUDA-file spec) name their lines
// with it, as the suite does.
func KeyLine(doc, key string, entry int) int { return Scan(doc).Find(key, entry) }

// Scan indexes the keys of a TOML document that has already parsed.
func Scan(doc string) *Lines {
	s := lineScanner{arrays: map[string]int{}, index: &Lines{}}
	for i, line := range strings.Split(doc, "\n") {
		s.scanLine(i+1, line)
	}
	return s.index
}

type lineScanner struct {
	index   *Lines
	arrays  map[string]int // [[name]] headers seen so far, by name
	table   []string       // the current table's key
	entry   int            // the current array-of-tables entry, or -1
	depth   int            // open [ and { of a value that continues
	closing string         // the delimiter of an open multi-line string
}

func (s *lineScanner) scanLine(number int, line string) {
	if s.depth > 0 || s.closing != "" {
		s.scanValue(line)
		return
	}
	text := strings.TrimSpace(line)
	switch {
	case text == "" || text[0] == '#':
	case strings.HasPrefix(text, "[["):
		s.header(number, text[2:], true)
	case text[0] == '[':
		s.header(number, text[1:], false)
	default:
		key, rest, ok := parseKey(text, '=')
		if !ok {
			return
		}
		full := append(append([]string{}, s.table...), key...)
		s.record(number, full, s.entry)
		s.scanValue(rest)
	}
}

func (s *lineScanner) header(number int, text string, array bool) {
	key, _, ok := parseKey(text, ']')
	if !ok {
		return
	}
	s.table = key
	name := toml.Key(key).String()
	if array {
		s.arrays[name]++
	}
	s.entry = -1
	if n, ok := s.arrays[toml.Key(key[:1]).String()]; ok {
		s.entry = n - 1
	}
	s.record(number, key, s.entry)
}

func (s *lineScanner) record(number int, key []string, entry int) {
	s.index.records = append(s.index.records, keyRecord{
		key: toml.Key(key).String(), entry: entry, line: number,
	})
}

// scanValue follows a value to its end, so that lines inside a multi-line
// array or string are not mistaken for keys.
func (s *lineScanner) scanValue(text string) {
	for i := 0; i < len(text); i++ {
		if s.closing != "" {
			end := strings.Index(text[i:], s.closing)
			if end < 0 {
				return
			}
			i += end + len(s.closing) - 1
			s.closing = ""
			continue
		}
		switch c := text[i]; c {
		case '#':
			return
		case '[', '{':
			s.depth++
		case ']', '}':
			s.depth--
		case '"', '\'':
			triple := strings.Repeat(string(c), 3)
			if strings.HasPrefix(text[i:], triple) {
				s.closing = triple
				i += 2
				continue
			}
			i = skipString(text, i)
		}
	}
}

// skipString returns the index of the quote that closes the string opening
// at text[start] (or the last index when the line ends first).
func skipString(text string, start int) int {
	quote := text[start]
	for i := start + 1; i < len(text); i++ {
		switch text[i] {
		case '\\':
			if quote == '"' {
				i++
			}
		case quote:
			return i
		}
	}
	return len(text) - 1
}

// parseKey reads a dotted key made of bare, "basic" and 'literal' parts up to
// the byte end ('=' for a key/value line, ']' for a header). It returns the
// parts and the text after end.
func parseKey(text string, end byte) (key []string, rest string, ok bool) {
	i := 0
	for {
		i = skipBlanks(text, i)
		part, next, ok := parseKeyPart(text, i)
		if !ok {
			return nil, "", false
		}
		key = append(key, part)
		i = skipBlanks(text, next)
		if i >= len(text) {
			return nil, "", false
		}
		switch text[i] {
		case '.':
			i++
		case end:
			return key, text[i+1:], true
		default:
			return nil, "", false
		}
	}
}

func parseKeyPart(text string, i int) (part string, next int, ok bool) {
	if i >= len(text) {
		return "", i, false
	}
	switch text[i] {
	case '"':
		close := skipString(text, i)
		part, err := strconv.Unquote(text[i : close+1])
		return part, close + 1, err == nil
	case '\'':
		close := skipString(text, i)
		if close <= i || text[close] != '\'' {
			return "", i, false
		}
		return text[i+1 : close], close + 1, true
	}
	start := i
	for i < len(text) && isBareKeyByte(text[i]) {
		i++
	}
	return text[start:i], i, i > start
}

func isBareKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func skipBlanks(text string, i int) int {
	for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	return i
}
