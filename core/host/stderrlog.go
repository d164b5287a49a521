package host

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// stderrLogMax bounds how much of one plugin process's stderr is kept
// whole. A compiler that dumps its IR can write megabytes; past this the
// log says how much more there was, and the tail still holds the end.
const stderrLogMax = 64 << 20

// stderrLog keeps everything a plugin process writes to stderr: the last
// few KB in memory (for a crash's reason) and the whole, up to
// stderrLogMax, in a file of the host's that lives as long as the process.
// The file is unlinked as soon as it is made: only the open descriptor
// holds it, so nothing is left behind even when the host is SIGKILLed.
// A marker taken before a call lets the caller read what that call wrote.
type stderrLog struct {
	tail *tailBuffer

	mu      sync.Mutex
	file    *os.File // nil when no file could be made: the tail alone
	written int64    // bytes the plugin wrote, kept or not
}

func newStderrLog() *stderrLog {
	l := &stderrLog{tail: newTailBuffer(stderrTailBytes)}
	if f, err := os.CreateTemp("", "flashcore-stderr-*.txt"); err == nil {
		if os.Remove(f.Name()) == nil {
			l.file = f
		} else {
			_ = f.Close()
		}
	}
	return l
}

func (l *stderrLog) Write(p []byte) (int, error) {
	_, _ = l.tail.Write(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil && l.written < stderrLogMax {
		keep := p[:min(int64(len(p)), stderrLogMax-l.written)]
		_, _ = l.file.WriteAt(keep, l.written)
	}
	l.written += int64(len(p))
	return len(p), nil
}

// Written is how many bytes the plugin has written: a marker for Since.
func (l *stderrLog) Written() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.written
}

// Since is what the plugin wrote from marker on. Without a file it is the
// tail; past stderrLogMax it says how much was not kept, then the tail.
func (l *stderrLog) Since(marker int64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		return l.tail.String()
	}
	end := min(l.written, stderrLogMax)
	if marker >= end {
		if l.written > stderrLogMax && marker < l.written {
			return l.tail.String()
		}
		return ""
	}
	data, err := io.ReadAll(io.NewSectionReader(l.file, marker, end-marker))
	if err != nil {
		return l.tail.String()
	}
	text := string(data)
	if l.written > stderrLogMax {
		text += fmt.Sprintf("\n[%d more bytes of stderr not kept; its last lines:]\n%s", l.written-stderrLogMax, l.tail.String())
	}
	return text
}

// String is the tail: the last few KB, for reasons.
func (l *stderrLog) String() string { return l.tail.String() }

// remove closes the file, which frees it; the log keeps only its tail.
func (l *stderrLog) remove() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil {
		_ = l.file.Close()
		l.file = nil
	}
}
