package suite

import (
	"fmt"
	"strings"
)

// Error is a problem in a suite file. Parse returns one, or several joined
// with errors.Join, one per line of the message.
type Error struct {
	Path string
	// Line is 0 when no line holds the problem (a required key left out of
	// a file that has no table for it, an empty suite).
	Line int
	// Key is the dotted TOML key, such as "measurement.warmup_runs"; empty
	// for a problem of the whole file.
	Key     string
	Message string
}

// Error formats the problem as FILE:LINE: key "a.b": message.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		fmt.Fprintf(&b, "key %q: ", e.Key)
	}
	b.WriteString(e.Message)
	return b.String()
}
