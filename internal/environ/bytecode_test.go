package environ

import (
	"slices"
	"testing"
)

func TestPythonBytecodeCache(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		cache   string
		want    []string
	}{
		{"no bytecode written anywhere: kept in the cache",
			[]string{"PYTHONDONTWRITEBYTECODE=1"}, "/c",
			[]string{"PYTHONDONTWRITEBYTECODE=", "PYTHONPYCACHEPREFIX=/c/pycache"}},
		{"bytecode allowed: left to Python", nil, "/c", nil},
		{"set empty is not set", []string{"PYTHONDONTWRITEBYTECODE="}, "/c", nil},
		{"the user's prefix wins", []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONPYCACHEPREFIX=/mine"}, "/c", nil},
		{"no cache", []string{"PYTHONDONTWRITEBYTECODE=1"}, "", nil},
		{"the last of a duplicated key counts",
			[]string{"PYTHONDONTWRITEBYTECODE=", "PYTHONDONTWRITEBYTECODE=x"}, "/b",
			[]string{"PYTHONDONTWRITEBYTECODE=", "PYTHONPYCACHEPREFIX=/b/pycache"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PythonBytecodeCache(tt.environ, tt.cache); !slices.Equal(got, tt.want) {
				t.Errorf("PythonBytecodeCache = %q, want %q", got, tt.want)
			}
		})
	}
}
