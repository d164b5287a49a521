package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flashcore/bench/core/host"
	"github.com/flashcore/bench/internal/buildtest"
	"github.com/flashcore/bench/internal/multicall"
)

func TestMain(m *testing.M) {
	code := m.Run()
	buildtest.Cleanup()
	os.Exit(code)
}

// The multi-call binary, built as make builds it, is cpu-reference when the
// host starts it through a link of that name, and says which plugins it
// holds when it is run by hand without one.
func TestMultiCallBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	binary := buildtest.Binary(t, "flashcore-plugins", "cmd/flashcore-plugins")
	bin := t.TempDir()
	if err := os.Symlink(binary, filepath.Join(bin, multicall.BinaryPrefix+"cpu-reference")); err != nil {
		t.Fatal(err)
	}
	found, err := host.Discover([]string{bin})
	if err != nil || len(found) != 1 {
		t.Fatalf("discovered %v, %v; want cpu-reference", found, err)
	}
	instance, err := host.Start(context.Background(), found[0], host.Options{})
	if err != nil {
		t.Fatalf("%s: %v", found[0].Name, err)
	}
	description, err := instance.Backend().Describe(context.Background())
	instance.Close()
	if err != nil || description.Name != "cpu-reference" {
		t.Errorf("started as cpu-reference, described itself as %q (%v)", description.Name, err)
	}
	out, err := exec.Command(binary).CombinedOutput()
	want := "holds the plugins cpu-reference, flash-attn-4, flashinfer, python-file, pytorch-sdpa, triton"
	if code := exitCode(err); code != 2 || !strings.Contains(string(out), want) {
		t.Errorf("run by hand without a name: exit %d, want 2 and %q\n%s", code, want, out)
	}
}

func exitCode(err error) int {
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
