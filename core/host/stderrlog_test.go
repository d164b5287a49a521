package host

import (
	"strings"
	"testing"
)

func TestStderrLogKeepsTheWholeStderrAndWhatEachCallWrote(t *testing.T) {
	l := newStderrLog()
	defer l.remove()
	_, _ = l.Write([]byte("worker ready\n"))
	mark := l.Written()
	dump := strings.Repeat("%0 = tt.load %arg0 : tensor<128x64x!tt.ptr<f16>>\n", 1000) // past the tail
	_, _ = l.Write([]byte("k.py:12:23: error: incompatible shapes\n" + dump))
	tests := []struct {
		name, got, wantPrefix string
		wantLen               int
	}{
		{"since the marker", l.Since(mark), "k.py:12:23: error:", len(dump) + 39},
		{"since the start", l.Since(0), "worker ready\nk.py:12:23", len(dump) + 39 + 13},
		{"the tail", l.String(), "%0 = tt.load", stderrTailBytes},
	}
	for _, tt := range tests {
		if !strings.HasPrefix(tt.got, tt.wantPrefix) || len(tt.got) > tt.wantLen || len(tt.got) < tt.wantLen-100 {
			t.Errorf("%s: %d bytes starting %.40q, want about %d starting %q", tt.name, len(tt.got), tt.got, tt.wantLen, tt.wantPrefix)
		}
	}
	if got := l.Since(l.Written()); got != "" {
		t.Errorf("nothing written since the end: got %q", got)
	}
	l.remove()
	if got := l.Since(0); !strings.HasSuffix(got, "tensor<128x64x!tt.ptr<f16>>") || len(got) > stderrTailBytes {
		t.Errorf("after remove: %d bytes, want the tail", len(got))
	}
}
