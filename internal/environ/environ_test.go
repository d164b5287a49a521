package environ

import "testing"

func TestValue(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		key  string
		want string
	}{
		{"set", []string{"A=1", "B=2"}, "B", "2"},
		{"unset", []string{"A=1"}, "B", ""},
		{"the last of two", []string{"A=1", "A=2"}, "A", "2"},
		{"a longer key is another", []string{"AB=1"}, "A", ""},
		{"empty", []string{"A="}, "A", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Value(tt.env, tt.key); got != tt.want {
				t.Errorf("Value(%q, %q) = %q, want %q", tt.env, tt.key, got, tt.want)
			}
		})
	}
}
