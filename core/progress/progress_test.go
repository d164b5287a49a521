package progress

import (
	"bytes"
	"strings"
	"testing"
)

// TestLinesIsThePlainLog: Lines writes the finished tasks' lines and
// nothing else, not even for Begin and Close.
func TestLinesIsThePlainLog(t *testing.T) {
	var out bytes.Buffer
	r := Lines(&out)
	r.Begin("case-a · cpu-reference")
	r.Done("[1/2] case-a cpu-reference: PASS 41.3 ms")
	r.Begin("case-a · sdpa")
	r.Done("[2/2] case-a sdpa: PASS 7.4 µs")
	r.Close()
	want := "[1/2] case-a cpu-reference: PASS 41.3 ms\n[2/2] case-a sdpa: PASS 7.4 µs\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}

// TestForPicksLinesOffATerminal: buffers (a pipe, a file, a test) get the
// plain log.
func TestForPicksLinesOffATerminal(t *testing.T) {
	if _, ok := For(&bytes.Buffer{}, &bytes.Buffer{}, 3).(lines); !ok {
		t.Error("For chose a bar for writers that are not terminals")
	}
}

// TestBarShowsTaskCountAndLines drives the real bar into a buffer: it
// shows the task and done/total, and every finished line.
func TestBarShowsTaskCountAndLines(t *testing.T) {
	var out bytes.Buffer
	b := NewBar(&out, 2)
	b.Begin("case-a · cuda-v8")
	b.Done("[1/2] case-a cuda-v8: PASS 28.9 µs")
	b.Begin("case-b · cuda-v8")
	text := out.String()
	for _, want := range []string{"case-a · cuda-v8", "[1/2] case-a cuda-v8: PASS 28.9 µs\n", "1/2"} {
		if !strings.Contains(text, want) {
			t.Errorf("the bar's output has no %q:\n%q", want, text)
		}
	}
	b.Done("[2/2] case-b cuda-v8: PASS 29.0 µs")
	b.Close()
	if !strings.Contains(out.String(), "[2/2] case-b cuda-v8: PASS 29.0 µs\n") {
		t.Errorf("the last line is missing:\n%q", out.String())
	}
}
