package multicall

import (
	"slices"
	"strings"
	"testing"
)

func TestSelect(t *testing.T) {
	plugins := []Plugin{{Name: "cpu-reference"}, {Name: "python-file"}}
	tests := []struct {
		name     string
		args     []string
		plugin   string   // "" when an error is wanted
		wantArgs []string // what the plugin sees
		err      string
	}{
		{"started through its link", []string{"/x/bin/flashcore-backend-cpu-reference"}, "cpu-reference",
			[]string{"/x/bin/flashcore-backend-cpu-reference"}, ""},
		{"link with arguments", []string{"flashcore-backend-python-file", "--name", "a", "--file", "a.py"}, "python-file",
			[]string{"flashcore-backend-python-file", "--name", "a", "--file", "a.py"}, ""},
		{"by hand", []string{"/x/bin/flashcore-plugins", "python-file", "--name", "a"}, "python-file",
			[]string{"/x/bin/flashcore-backend-python-file", "--name", "a"}, ""},
		{"link to a plugin it does not hold", []string{"flashcore-backend-triton"}, "", nil, `no plugin "triton"`},
		{"by hand, unknown", []string{"flashcore-plugins", "triton"}, "", nil, `no plugin "triton"`},
		{"by hand, no name", []string{"flashcore-plugins"}, "", nil, "name the plugin"},
		{"by hand, a flag", []string{"flashcore-plugins", "--help"}, "", nil, "name the plugin"},
		{"empty", nil, "", nil, "no command line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plugin, args, err := Select(tt.args, plugins)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil || plugin.Name != tt.plugin || !slices.Equal(args, tt.wantArgs) {
				t.Errorf("got %q %q %v, want %q %q", plugin.Name, args, err, tt.plugin, tt.wantArgs)
			}
		})
	}
}
