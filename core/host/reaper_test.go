//go:build linux

package host

import (
	"reflect"
	"testing"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		stat  string
		ppid  int
		state string
		ok    bool
	}{
		{"4242 (sleep) S 4241 4242 1 0 -1", 4241, "S", true},
		{"77 (a) (b) c)) Z 1 77 77 0", 1, "Z", true},
		{"9 (with space) R 8 9", 8, "R", true},
		{"9 no parens", 0, "", false},
		{"9 (x) S", 0, "", false},
	}
	for _, tt := range tests {
		ppid, state, ok := parseStat(tt.stat)
		if ppid != tt.ppid || state != tt.state || ok != tt.ok {
			t.Errorf("parseStat(%q) = %d %q %t, want %d %q %t", tt.stat, ppid, state, ok, tt.ppid, tt.state, tt.ok)
		}
	}
}

func TestCgroupPaths(t *testing.T) {
	tests := []struct {
		name, mountinfo, membership string
		mountPoint, root, path      string
		ok                          bool
	}{
		{
			name:       "unified",
			mountinfo:  "29 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
			membership: "0::/user.slice/user-1000.slice/session-3.scope\n",
			mountPoint: "/sys/fs/cgroup", root: "/", path: "/user.slice/user-1000.slice/session-3.scope", ok: true,
		},
		{
			name: "hybrid",
			mountinfo: "30 25 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n" +
				"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
			membership: "4:memory:/x\n0::/\n",
			mountPoint: "/sys/fs/cgroup/unified", root: "/", path: "/", ok: true,
		},
		{
			name:       "optional fields and an escaped space",
			mountinfo:  "29 1 0:26 /a /mnt/c\\040g rw shared:4 master:1 - cgroup2 none rw\n",
			membership: "0::/a/b\n",
			mountPoint: "/mnt/c g", root: "/a", path: "/a/b", ok: true,
		},
		{
			name:       "v1 only",
			mountinfo:  "30 25 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
			membership: "4:memory:/x\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mountPoint, root, ok := cgroup2Mount(tt.mountinfo)
			path, pathOK := unifiedPath(tt.membership)
			if mountPoint != tt.mountPoint || root != tt.root || ok != tt.ok || path != tt.path || pathOK != tt.ok {
				t.Errorf("got mount %q root %q (%t), path %q (%t); want %q %q %q (%t)",
					mountPoint, root, ok, path, pathOK, tt.mountPoint, tt.root, tt.path, tt.ok)
			}
		})
	}
}

func TestPluginEnv(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		scratch string
		uid     int
		want    []string
	}{
		{"scratch replaces TMPDIR", []string{"A=1", "TMPDIR=/tmp", reaperEnv + "=12", "B=2"}, "/s", 0, []string{"A=1", "B=2", "TMPDIR=/s"}},
		{"no scratch keeps TMPDIR", []string{"TMPDIR=/tmp", reaperEnv + "=12"}, "", 0, []string{"TMPDIR=/tmp"}},
		{"the host's user keeps its names", []string{"USER=root", "LOGNAME=root"}, "", 0, []string{"USER=root", "LOGNAME=root"}},
		{"an own uid is named", []string{"USER=root", "A=1", "LOGNAME=root"}, "/s", 1593835521,
			[]string{"A=1", "TMPDIR=/s", "USER=flashcore-1593835521", "LOGNAME=flashcore-1593835521"}},
		{"an own uid is named where the host's user has no name", []string{"A=1"}, "", 7,
			[]string{"A=1", "USER=flashcore-7", "LOGNAME=flashcore-7"}},
	}
	for _, tt := range tests {
		if got := pluginEnv(tt.environ, tt.scratch, tt.uid); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestParseReaperArgs(t *testing.T) {
	tests := []struct {
		name    string
		hostPID string
		args    []string
		want    reaperConfig
		wantErr string
	}{
		{
			name: "round trip", hostPID: "4242", args: reaperArgs("/tmp/s", "/tmp/p", "/cg/p", `{"read":["/"]}`, 0, []string{"wrap", "-x", "/bin/plugin"}),
			want: reaperConfig{hostPID: 4242, scratch: "/tmp/s", sockets: "/tmp/p", cgroup: "/cg/p", wall: `{"read":["/"]}`, command: []string{"wrap", "-x", "/bin/plugin"}},
		},
		{name: "own user", hostPID: "7", args: reaperArgs("/tmp/s", "", "", "", 0x5f000001, []string{"/bin/plugin"}),
			want: reaperConfig{hostPID: 7, scratch: "/tmp/s", uid: 0x5f000001, command: []string{"/bin/plugin"}}},
		{name: "no cgroup", hostPID: "7", args: reaperArgs("/tmp/s", "", "", "", 0, []string{"/bin/plugin"}),
			want: reaperConfig{hostPID: 7, scratch: "/tmp/s", command: []string{"/bin/plugin"}}},
		{name: "not a pid", hostPID: "yes", args: reaperArgs("", "", "", "", 0, []string{"p"}), wantErr: `FLASHCORE_REAPER="yes" is not a host pid`},
		{name: "no command", hostPID: "7", args: reaperArgs("/s", "", "", "", 0, nil), wantErr: "no plugin command"},
		{name: "unknown flag", hostPID: "7", args: []string{"-frob", "--", "p"}, wantErr: "flag provided but not defined: -frob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseReaperArgs(tt.hostPID, tt.args)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
