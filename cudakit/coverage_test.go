package cudakit

import (
	"strings"
	"testing"
	"time"
)

func TestUncoveredDeviceTime(t *testing.T) {
	us := func(v ...float64) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x * 1000)
		}
		return out
	}
	tests := []struct {
		name          string
		events, cupti []time.Duration
		uncovered     bool
	}{
		{"seed shape cold: the events' latency", us(14.1, 14.2, 14.3), us(11.8, 11.8, 11.9), false},
		{"large kernel, a few µs of gaps", us(10002, 10003), us(10000, 10000), false},
		{"hidden work at a small shape", us(40, 41, 40), us(11, 11, 11), true},
		{"hidden work at a large shape", us(2000, 2001), us(1000, 1000), true},
		{"10% but under 5 µs", us(30, 30), us(26, 26), false},
		{"no samples", nil, us(1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			why := uncoveredDeviceTime(tt.events, tt.cupti)
			if (why != "") != tt.uncovered {
				t.Errorf("uncoveredDeviceTime = %q, want uncovered %v", why, tt.uncovered)
			}
			if why != "" && !strings.Contains(why, "events' figure is used") {
				t.Errorf("reason %q does not say which figure is used", why)
			}
		})
	}
}
