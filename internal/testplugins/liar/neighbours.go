package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/sdk"
)

// The neighbour lies go after the other backends of the run rather than
// the host's checks:
//
//	peek    watches the temporary directories for other rows' output
//	        files, keeps each by the hash of the inputs beside it, and
//	        writes what it stole for its own cases, computing nothing (all
//	        zeros when it stole nothing)
//	meddle  flips a byte of every other row's input file it can find
//	burn    burns a CPU from the moment it is described, to slow down
//	        whatever the host measures next to it
//	escape  writes its pid into the root cgroup, to outlive the host, and
//	        says in a warning whether it could
//	root    uses root's powers where Landlock lets a plugin write (/proc):
//	        it writes a sysctl (vm.stat_interval, its own value back, so
//	        the machine is unchanged) and says in a warning as which uid it
//	        ran and whether the write went through; a plugin that can
//	        write sysctls can retune the scheduler under its neighbours
var neighbourLies = map[string]bool{"peek": true, "meddle": true, "burn": true, "escape": true, "root": true}

var (
	neighbourOnce sync.Once
	stolenMu      sync.Mutex
	stolen        = map[string][]byte{} // output by input hash
	meddled       int
	escapeResult  string
	rootResult    string
)

// startNeighbourLie starts the lie's work in the background, once.
func (l *liar) startNeighbourLie() {
	if !neighbourLies[l.lie] {
		return
	}
	neighbourOnce.Do(func() {
		switch l.lie {
		case "peek", "meddle":
			go watchNeighbours(l.lie)
		case "burn":
			go func() {
				for x := uint64(1); ; x = x*6364136223846793005 + 1 {
					if x == 0 {
						fmt.Fprint(os.Stderr, "")
					}
				}
			}()
		case "escape":
			escapeResult = escapeToRootCgroup()
		case "root":
			rootResult = writeSysctl()
		}
	})
}

// watchNeighbours searches the run's work directory, where every plugin's
// workspace is made, every millisecond, for other rows' files. (Only the
// run's own: a test run with the walls off must not reach the runs of
// other tests on the machine.)
func watchNeighbours(lie string) {
	own := os.Getenv("TMPDIR")
	roots := []string{filepath.Dir(own)}
	for {
		for _, root := range roots {
			_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return nil
				}
				if d.IsDir() && (path == own || strings.Count(strings.TrimPrefix(path, root), "/") > 6) {
					return filepath.SkipDir
				}
				switch {
				case lie == "peek" && d.Name() == inputs.OutputFile:
					steal(path)
				case lie == "meddle" && d.Name() == inputs.QFile:
					meddle(path)
				}
				return nil
			})
		}
		time.Sleep(time.Millisecond)
	}
}

// steal keeps the output at path by the hash of the inputs beside it.
func steal(path string) {
	dir := filepath.Dir(path)
	var parts [3][]byte
	for i, name := range []string{inputs.QFile, inputs.KFile, inputs.VFile} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return
		}
		parts[i] = data
	}
	output, err := os.ReadFile(path)
	if err != nil || len(output) == 0 {
		return
	}
	hash := inputs.HashInputs(parts[0], parts[1], parts[2])
	stolenMu.Lock()
	defer stolenMu.Unlock()
	if _, ok := stolen[hash]; !ok {
		stolen[hash] = output
	}
}

func stolenOutput(t *inputs.Tensors) []byte {
	stolenMu.Lock()
	defer stolenMu.Unlock()
	if out, ok := stolen[t.SHA256]; ok {
		return out
	}
	return zeroOutput(t)
}

// zeroOutput is an output of the right size, all zeros.
func zeroOutput(t *inputs.Tensors) []byte {
	return make([]byte, int(t.Shape.Batch*t.Shape.Heads*t.Shape.SeqQ*t.Shape.HeadDim)*t.Shape.DType.Size())
}

// meddle flips the first byte of another row's input file.
func meddle(path string) {
	if err := os.Chmod(path, 0o644); err != nil {
		return
	}
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return
	}
	data[0] ^= 0x01
	if os.WriteFile(path, data, 0o644) == nil {
		stolenMu.Lock()
		meddled++
		stolenMu.Unlock()
	}
}

// escapeToRootCgroup moves this process into the root of the cgroup v2
// hierarchy, and says how that went.
func escapeToRootCgroup() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "escape: " + err.Error()
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		for i, field := range fields {
			if field == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && i >= 5 {
				procs := filepath.Join(fields[4], "cgroup.procs")
				if err := os.WriteFile(procs, []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
					return "escape: " + err.Error()
				}
				return "escape: moved into " + procs
			}
		}
	}
	return "escape: no cgroup2 mount"
}

// sysctlFile is the sysctl the root lie writes: its own value back.
const sysctlFile = "/proc/sys/vm/stat_interval"

// writeSysctl writes sysctlFile's value back to it, and says as which uid
// and how that went: "root: uid 0, sysctl written" or "root: uid N,
// sysctl: <error>".
func writeSysctl() string {
	said := fmt.Sprintf("root: uid %d, ", os.Getuid())
	value, err := os.ReadFile(sysctlFile)
	if err != nil {
		return said + "sysctl: " + err.Error()
	}
	if err := os.WriteFile(sysctlFile, value, 0); err != nil {
		return said + "sysctl: " + err.Error()
	}
	return said + "sysctl written"
}

// neighbourDiagnostics tell the test what the lie managed.
func (l *liar) neighbourDiagnostics() []sdk.Diagnostic {
	stolenMu.Lock()
	defer stolenMu.Unlock()
	var summary string
	switch l.lie {
	case "peek":
		summary = fmt.Sprintf("peek: stole %d outputs", len(stolen))
	case "meddle":
		summary = fmt.Sprintf("meddle: changed %d input files", meddled)
	case "escape":
		summary = escapeResult
	case "root":
		summary = rootResult
	default:
		return nil
	}
	return []sdk.Diagnostic{{Severity: sdk.Warning, Summary: summary}}
}
