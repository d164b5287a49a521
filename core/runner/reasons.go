package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/flashcore/bench/core/results"
	"github.com/flashcore/bench/internal/untrusted"
)

// meaningfulLine picks, from the tail of a plugin's stderr, the line that
// says what went wrong: a Go panic's message ("panic: ..." or "fatal error:
// ..."), the "@message" of a JSON log line, else the last line that is not
// part of a stack trace. It returns "" for an empty tail.
func meaningfulLine(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.TrimSpace(lines[i])
		if strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ") {
			return line
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.TrimSpace(lines[i])
		if message := logMessage(line); message != "" {
			line = message
		}
		if line != "" && !stackLine(lines[i]) {
			return line
		}
	}
	return ""
}

// stackLine reports whether a line belongs to a Go stack trace or the
// runtime's exit report rather than to what the program said.
func stackLine(raw string) bool {
	line := strings.TrimSpace(raw)
	switch {
	case strings.HasPrefix(raw, "\t"),
		strings.HasPrefix(line, "goroutine "),
		strings.HasPrefix(line, "exit status "),
		strings.HasPrefix(line, "[signal "),
		strings.HasPrefix(line, "created by "),
		strings.HasSuffix(line, ")") && strings.Contains(line, "(") && strings.Contains(line, ".") && !strings.Contains(line, " "):
		return true
	}
	return false
}

// logMessage is the message of an hclog JSON line, "" for any other line.
func logMessage(line string) string {
	if !strings.HasPrefix(line, "{") {
		return ""
	}
	var entry struct {
		Message string `json:"@message"`
		Error   string `json:"error"`
	}
	if json.Unmarshal([]byte(line), &entry) != nil || entry.Message == "" {
		return ""
	}
	if entry.Error != "" {
		return entry.Message + ": " + entry.Error
	}
	return entry.Message
}

// compilerError is the first compiler error line in a plugin's stderr:
// "error: ...", "FILE:LINE[:COL]: error: ..." or "FILE(LINE): error: ...", as
// MLIR (under Triton's compiler), gcc and nvcc print them. "" when there is none.
func compilerError(stderr string) string {
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimSpace(line)
		if compilerErrorLine.MatchString(line) {
			return line
		}
	}
	return ""
}

var compilerErrorLine = regexp.MustCompile(`^(error: |\S[^ ]*(:\d+(:\d+)?|\(\d+\)): error: )\S`)

// stderrHeading separates a row's whole reason from the plugin's whole
// stderr in the row's full_reason_file.
const stderrHeading = "\n\n--- the plugin's stderr, whole, from its start to the failure ---\n"

// settleText makes a finished row's plugin-supplied text safe to keep: the
// reason and the stderr tail lose control characters (untrusted.Text), and
// a reason over untrusted.MaxReason is cut there. The whole reason, and
// for a row whose plugin call failed the plugin's whole stderr, go to a
// file beside the results file that the row's facts name
// (full_reason_file). Without a results file the whole text is not kept.
func (r *runner) settleText(res *results.Result) {
	stderr := r.rowStderr
	r.rowStderr = ""
	res.StderrTail, _ = untrusted.Cap(untrusted.Text(res.StderrTail), untrusted.MaxReason)
	full := untrusted.Text(res.Reason)
	capped, cut := untrusted.Cap(full, untrusted.MaxReason)
	res.Reason = capped
	if !cut && stderr == "" || r.cfg.ResultsPath == "" {
		return
	}
	if stderr != "" {
		full += stderrHeading + untrusted.Text(stderr)
	}
	dir := strings.TrimSuffix(r.cfg.ResultsPath, filepath.Ext(r.cfg.ResultsPath)) + ".reasons"
	name := fmt.Sprintf("%03d-%s-%s.txt", len(r.run.Results)+1, safeName(res.CaseID), safeName(res.Label))
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o755); err == nil && os.WriteFile(path, []byte(full), 0o644) == nil {
		addFacts(res, map[string]string{"full_reason_file": path})
	}
}

// safeName keeps letters, digits, '-', '_' and '.' of s, for a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return r
		}
		return '_'
	}, s)
}
