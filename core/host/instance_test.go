package host

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestPluginCommandWrapsWhenAsked(t *testing.T) {
	tests := []struct {
		wrapper string
		args    []string
		want    []string
	}{
		{"", nil, []string{"/bin/plugin"}},
		{"  ", nil, []string{"/bin/plugin"}},
		{"compute-sanitizer --log-file s.txt", nil, []string{"compute-sanitizer", "--log-file", "s.txt", "/bin/plugin"}},
		{"", []string{"--file", "a.py"}, []string{"/bin/plugin", "--file", "a.py"}},
		{"nsys profile", []string{"--file", "a.py"}, []string{"nsys", "profile", "/bin/plugin", "--file", "a.py"}},
	}
	for _, tt := range tests {
		if got := pluginCommand("/bin/plugin", tt.args, strings.Fields(tt.wrapper)).Args; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("wrapper %q: args %q, want %q", tt.wrapper, got, tt.want)
		}
	}
}

func TestClassifyStart(t *testing.T) {
	tests := []struct {
		name, err, stderr string
		reason            string
		unavailable       bool
	}{
		{"cu init", "Unrecognized remote plugin message: Error in initialization ... NoDevice", "", "no CUDA device", true},
		{"no driver, shim", "Unrecognized remote plugin message: Error in initialization, please refer to ... StubLibrary",
			"flashcore: no NVIDIA driver (libcuda.so.1: cannot open shared object file: No such file or directory)\n",
			"no NVIDIA driver (libcuda.so.1: cannot open shared object file: No such file or directory)", true},
		{"no driver, shim, no detail", "plugin exited before we could connect", "flashcore: no NVIDIA driver\n", "no NVIDIA driver", true},
		{"no driver, linked", "plugin exited before we could connect", "error while loading shared libraries: libcuda.so.1: cannot open shared object file", "no usable CUDA driver: error while loading shared libraries: libcuda.so.1: cannot open shared object file", true},
		{"stdout", "Unrecognized remote plugin message: hello\nThis usually means...", "", "plugin wrote to stdout before the handshake: hello", false},
		{"exit", "plugin exited before we could connect", "panic: boom", "plugin exited during start-up: panic: boom", false},
		{"exit before a line", "Unrecognized remote plugin message: \nFailed to read any lines from plugin's stdout", "flashcore: start plugin: fork/exec /p: no such file or directory",
			"plugin exited during start-up: flashcore: start plugin: fork/exec /p: no such file or directory", false},
		{"silent exit", "Unrecognized remote plugin message: \nFailed to read any lines from plugin's stdout", "", "plugin exited during start-up: it said nothing", false},
		{"version", "Incompatible API version with plugin. Plugin version: 2, Client versions: [1]", "", "plugin speaks another protocol version; rebuild it against this flashcore", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			se := classifyStart("p", errors.New(tt.err), tt.stderr)
			if se.Reason != tt.reason || se.Unavailable != tt.unavailable {
				t.Errorf("got %q unavailable=%t, want %q unavailable=%t", se.Reason, se.Unavailable, tt.reason, tt.unavailable)
			}
		})
	}
}
