package tomlpos

import "testing"

func TestKeyLines(t *testing.T) {
	doc := `# comment with key = 1
name = "a # not a comment"   # comment
"quoted key" = 1
plugin_path = [
  "x = 1",
  """
y = 2
""",
]
[ measurement ]
l2 = ['hot'] # [x]
[[sweeps]]
batch = [1]
[[sweeps]]
batch = [2]
[[backends]]
name = "b"
[backends.tunables]
tile_n = ["32"]
[[backends]]
tunables = { tile_n = ["64"] }
point.x = 1
`
	lines := Scan(doc)
	tests := []struct {
		key   string
		entry int
		want  int
	}{
		{"name", -1, 2},
		{`"quoted key"`, -1, 3},
		{"plugin_path", -1, 4},
		{"y", -1, 0},
		{"measurement", -1, 10},
		{"measurement.l2", -1, 11},
		{"measurement.time_cap", -1, 10}, // absent: its table
		{"sweeps.batch", -1, 13},
		{"sweeps.batch", 0, 13},
		{"sweeps.batch", 1, 15},
		{"sweeps.heads", 1, 14},
		{"backends.tunables.tile_n", 0, 19},
		{"backends.tunables.tile_n", 1, 21}, // inline table: its key
		{"backends.point.x", 1, 22},
		{"nothing", -1, 0},
	}
	for _, tc := range tests {
		if got := lines.Find(tc.key, tc.entry); got != tc.want {
			t.Errorf("find(%q, %d) = %d, want %d", tc.key, tc.entry, got, tc.want)
		}
	}
}
