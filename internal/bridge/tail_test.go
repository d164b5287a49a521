package bridge

import "testing"

func TestTailBufferKeepsTheLastBytesFromALineStart(t *testing.T) {
	b := newTailBuffer(32)
	for _, line := range []string{"Traceback (most recent call last):\n", "  File \"x.py\", line 3\n", "RuntimeError: boom\n"} {
		if _, err := b.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.String(); got != "RuntimeError: boom" {
		t.Errorf("tail = %q, want the last whole line", got)
	}
	small := newTailBuffer(64)
	_, _ = small.Write([]byte("one\ntwo\n"))
	if got := small.String(); got != "one\ntwo" {
		t.Errorf("unwrapped tail = %q, want everything", got)
	}
}
