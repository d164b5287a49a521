package cpureference

import (
	"os"
	"runtime"
	"testing"
)

func TestCPUModelName(t *testing.T) {
	captured, err := os.ReadFile("testdata/cpuinfo-amd-epyc.txt")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cpuinfo string
		want    string
	}{
		{"captured x86-64", string(captured), "AMD EPYC"},
		{"no model name", "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n", runtime.GOARCH + " cpu"},
		{"empty model name", "model name\t:\n", runtime.GOARCH + " cpu"},
		{"no file", "", runtime.GOARCH + " cpu"},
	}
	for _, tc := range tests {
		if got := cpuModelName([]byte(tc.cpuinfo)); got != tc.want {
			t.Errorf("%s: cpuModelName = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestParseCacheSize(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		{"32K\n", 32 << 10},
		{"32768K", 32 << 20},
		{"2M", 2 << 20},
		{"512", 512},
		{"", 0},
		{"lots", 0},
		{"-4K", 0},
	}
	for _, tc := range tests {
		if got := parseCacheSize(tc.text); got != tc.want {
			t.Errorf("parseCacheSize(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
}

// TestEvictWritesEveryLine: every pass writes a new value to every cache
// line of the buffer, whatever the number of threads and however the
// buffer's size divides among them.
func TestEvictWritesEveryLine(t *testing.T) {
	for _, size := range []int{64, 64*7 + 5, 1 << 20} {
		e := &cacheEvictor{buffer: make([]byte, size)}
		for pass := byte(1); pass <= 2; pass++ {
			e.evict()
			for i := 0; i < size; i += 64 {
				if e.buffer[i] != pass {
					t.Fatalf("size %d, pass %d: line at %d holds %d", size, pass, i, e.buffer[i])
				}
			}
		}
	}
}
