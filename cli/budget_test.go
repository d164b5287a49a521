package cli

import (
	"testing"
	"time"

	"github.com/flashcore/bench/core/runner"
)

func TestParseBudget(t *testing.T) {
	for _, tt := range []struct {
		spec string
		want runner.Budget
	}{
		{"", runner.Budget{}},
		{"2s", runner.Budget{Row: 2 * time.Second}},
		{"row=500ms", runner.Budget{Row: 500 * time.Millisecond}},
		{"suite=60s", runner.Budget{Suite: time.Minute}},
		{"row=2s, suite=1m", runner.Budget{Row: 2 * time.Second, Suite: time.Minute}},
	} {
		got, err := parseBudget(tt.spec)
		if err != nil || got != tt.want {
			t.Errorf("parseBudget(%q) = %+v, %v; want %+v", tt.spec, got, err, tt.want)
		}
	}
	for _, spec := range []string{"0s", "-1s", "2", "suite=", "case=2s"} {
		if _, err := parseBudget(spec); err == nil {
			t.Errorf("parseBudget(%q) took it", spec)
		}
	}
}
