package runner

import (
	"encoding/json"
	"strings"
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
