package slurmtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cluster is a one-node Slurm on localhost with its own munged, all in
// one directory, all started and stopped by the test.
type cluster struct {
	dir     string
	conf    string
	daemons []*exec.Cmd
}

// daemonTools are the programs the cluster needs, and the package each
// comes from.
var daemonTools = map[string]string{
	"munged": "munge", "slurmctld": "slurmctld (slurm-wlm)", "slurmd": "slurmd (slurm-wlm)",
	"sbatch": "slurm-client (slurm-wlm)", "scontrol": "slurm-client (slurm-wlm)", "sinfo": "slurm-client (slurm-wlm)",
	"squeue": "slurm-client (slurm-wlm)", "scancel": "slurm-client (slurm-wlm)",
}

// RequireEnv, set to 1, turns the skips below into failures: CI installs
// Slurm and must not pass by skipping.
const RequireEnv = "FLASHCORE_REQUIRE_SLURM"

// skipUnlessPossible skips with the reason where a cluster cannot be
// started here.
func skipUnlessPossible(t *testing.T) {
	t.Helper()
	skip := t.Skipf
	if os.Getenv(RequireEnv) == "1" {
		skip = t.Fatalf
	}
	if os.Geteuid() != 0 {
		skip("needs root: slurmd starts jobs as their users, and munged and slurmctld run as root here")
	}
	for tool, pkg := range daemonTools {
		if _, err := exec.LookPath(tool); err != nil {
			skip("%s is not installed (package %s): apt-get install slurm-wlm munge, as .ci/run does", tool, pkg)
		}
	}
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{dir: t.TempDir()}
	t.Cleanup(c.stop)
	for _, sub := range []string{"munge", "state", "spool", "logs"} {
		if err := os.Mkdir(filepath.Join(c.dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	key := make([]byte, 128)
	rand.Read(key)
	if err := os.WriteFile(filepath.Join(c.dir, "munge", "munge.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	// munged wants to reach its socket's directory, and so do clients.
	os.Chmod(filepath.Join(c.dir, "munge"), 0o711)
	c.conf = filepath.Join(c.dir, "slurm.conf")
	if err := os.WriteFile(c.conf, []byte(c.config(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	m := filepath.Join(c.dir, "munge")
	c.start(t, "munged", "-F", "-f", "--key-file="+m+"/munge.key", "--socket="+m+"/sock", "--pid-file="+m+"/pid",
		"--seed-file="+m+"/seed", "--log-file="+m+"/log")
	c.waitFor(t, 10*time.Second, "munged's socket", func() bool { _, err := os.Stat(m + "/sock"); return err == nil })
	c.start(t, "slurmctld", "-D", "-i", "-f", c.conf)
	c.start(t, "slurmd", "-D", "-f", c.conf, "-N", "fcnode")
	c.waitFor(t, 60*time.Second, "the node to be idle", func() bool {
		out, _ := c.command(5*time.Second, "sinfo", "-h", "-o", "%T", "-n", "fcnode").Output()
		return strings.TrimSpace(string(out)) == "idle"
	})
	return c
}

func (c *cluster) config(t *testing.T) string {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ = strings.Cut(host, ".")
	d := c.dir
	return fmt.Sprintf(`# A one-node cluster for flashcore's Slurm test.
ClusterName=flashcore-test
SlurmctldHost=%s(127.0.0.1)
SlurmctldPort=%d
SlurmdPort=%d
AuthType=auth/munge
AuthInfo=socket=%s/munge/sock
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SlurmUser=root
SlurmdUser=root
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
StateSaveLocation=%s/state
SlurmdSpoolDir=%s/spool
SlurmctldPidFile=%s/slurmctld.pid
SlurmdPidFile=%s/slurmd.pid
SlurmctldLogFile=%s/logs/slurmctld.log
SlurmdLogFile=%s/logs/slurmd.log
NodeName=fcnode NodeHostname=%s NodeAddr=127.0.0.1 CPUs=%d State=UNKNOWN
PartitionName=flashcore Nodes=fcnode Default=YES MaxTime=30 State=UP
`, host, freePort(t), freePort(t), d, d, d, d, d, d, d, host, max(1, cpus()))
}

func cpus() int {
	out, err := exec.Command("nproc").Output()
	if err != nil {
		return 1
	}
	var n int
	fmt.Sscan(string(out), &n)
	return n
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start runs a daemon in the foreground, as the test's child, so that
// stop ends exactly the processes this test started.
func (c *cluster) start(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = c.env()
	log, err := os.Create(filepath.Join(c.dir, "logs", name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	c.daemons = append(c.daemons, cmd)
}

// stop cancels what is left of the test's jobs, whose steps slurmd's
// slurmstepd would otherwise run on after the daemons are gone, then ends
// the daemons this test started, the last started first.
func (c *cluster) stop() {
	if len(c.daemons) > 0 {
		c.command(10*time.Second, "scancel", "--full", "--partition=flashcore").Run()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			out, err := c.command(5*time.Second, "squeue", "-h").Output()
			if err != nil || strings.TrimSpace(string(out)) == "" {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	for i := len(c.daemons) - 1; i >= 0; i-- {
		d := c.daemons[i]
		d.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { d.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			d.Process.Kill()
			<-done
		}
	}
	c.daemons = nil
}

func (c *cluster) env() []string {
	return append(os.Environ(), "SLURM_CONF="+c.conf)
}

// command is a client command against this cluster, bounded in time.
func (c *cluster) command(limit time.Duration, name string, args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = c.env()
	cmd.Cancel = func() error { cancel(); return cmd.Process.Kill() }
	return cmd
}

func (c *cluster) waitFor(t *testing.T, limit time.Duration, what string, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !ready() {
		if time.Now().After(deadline) {
			t.Fatalf("Slurm test cluster: no %s after %s\n%s", what, limit, c.logs())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// jobState is the state scontrol gives a job (the first of an array's).
func (c *cluster) jobState(id string) string {
	out, _ := c.command(10*time.Second, "scontrol", "-o", "show", "job", id).Output()
	for _, field := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(field, "JobState="); ok {
			return v
		}
	}
	return ""
}

// logs is the end of every daemon's log, for a failure message.
func (c *cluster) logs() string {
	var b bytes.Buffer
	paths, _ := filepath.Glob(filepath.Join(c.dir, "logs", "*"))
	for _, p := range paths {
		data, _ := os.ReadFile(p)
		if len(data) > 3000 {
			data = data[len(data)-3000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(p), data)
	}
	return b.String()
}
