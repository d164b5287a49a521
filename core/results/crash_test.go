package results

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// crashEnv names the results file a child process saves to when the test
// binary is started as that child.
const crashEnv = "FLASHCORE_RESULTS_CRASH_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashEnv); path != "" {
		saveAndHangHalfway(path)
	}
	os.Exit(m.Run())
}

// saveAndHangHalfway saves a run, stopping forever after half of it has
// reached the temporary file, and says so on stdout.
func saveAndHangHalfway(path string) {
	w := NewWriter(path)
	w.writeTemp = func(f *os.File, data []byte) error {
		f.Write(data[:len(data)/2])
		f.Sync()
		os.Stdout.WriteString("half written\n")
		select {}
	}
	w.Save(&Run{SchemaVersion: SchemaVersion, Status: RunRunning, Command: "the new run"})
	os.Exit(2) // not reached
}

// TestSaveKilledMidWriteLeavesAValidFile kills a process in the middle of
// a Save, the way a power cut or SIGKILL would, and loads the file it was
// replacing.
func TestSaveKilledMidWriteLeavesAValidFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.json")
	if err := NewWriter(path).Save(sampleRun()); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, path)

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), crashEnv+"="+path)
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "half written\n" {
		child.Process.Kill()
		t.Fatalf("child said %q, %v", line, err)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait()

	if !bytes.Equal(readFile(t, path), before) {
		t.Fatal("the results file changed although the save was killed before it finished")
	}
	if _, err := Load(path); err != nil {
		t.Fatalf("the file left by a killed save does not load: %v", err)
	}
	assertPartialTempLeft(t, dir)
}

// assertPartialTempLeft proves the child really died mid-write: its
// half-written temporary file is still there.
func assertPartialTempLeft(t *testing.T, dir string) {
	t.Helper()
	temps, _ := filepath.Glob(filepath.Join(dir, ".results.json.tmp-*"))
	if len(temps) != 1 {
		t.Fatalf("want the killed save's one temporary file, found %v", temps)
	}
	partial := readFile(t, temps[0])
	if !strings.HasPrefix(string(partial), "{") || strings.HasSuffix(strings.TrimSpace(string(partial)), "}") {
		t.Errorf("temporary file is not a half-written run: %q", partial)
	}
}
