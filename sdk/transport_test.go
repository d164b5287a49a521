package sdk_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/flashcore/bench/internal/testplugins/testbackend"
	"github.com/flashcore/bench/sdk"
)

// These tests start the test plugins of internal/testplugins as real
// processes through ClientConfig and Dispense, as the host does.

var plugins struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if plugins.dir != "" {
		os.RemoveAll(plugins.dir)
	}
	os.Exit(code)
}

// pluginPath builds every test plugin, once per test binary, and returns
// the path of the one named.
func pluginPath(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds plugin binaries")
	}
	plugins.once.Do(func() {
		plugins.dir, plugins.err = os.MkdirTemp("", "flashcore-testplugins-")
		if plugins.err != nil {
			return
		}
		build := exec.Command("go", "build", "-o", plugins.dir+string(os.PathSeparator),
			"github.com/flashcore/bench/internal/testplugins/...")
		if output, err := build.CombinedOutput(); err != nil {
			plugins.err = fmt.Errorf("go build: %v\n%s", err, output)
		}
	})
	if plugins.err != nil {
		t.Fatal(plugins.err)
	}
	return filepath.Join(plugins.dir, name)
}

// syncBuffer collects a plugin's stderr.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startPlugin starts the named test plugin and returns its Backend, its
// client (to kill it) and its stderr.
func startPlugin(t *testing.T, name string) (sdk.Backend, *plugin.Client, *syncBuffer) {
	t.Helper()
	stderr := &syncBuffer{}
	client := plugin.NewClient(sdk.ClientConfig(exec.Command(pluginPath(t, name)), stderr, nil))
	t.Cleanup(client.Kill)
	backend, err := sdk.Dispense(client)
	if err != nil {
		t.Fatalf("dispense %s: %v\nstderr:\n%s", name, err, stderr)
	}
	return backend, client, stderr
}

// prepareCase writes random inputs for shape and prepares them as case c1
// of variant.
func prepareCase(t *testing.T, backend sdk.Backend, variant string, shape sdk.Shape) sdk.PrepareRequest {
	t.Helper()
	dir := t.TempDir()
	request := sdk.PrepareRequest{
		CaseID:  "c1",
		Variant: variant,
		Shape:   shape,
		Files: sdk.Tensors{
			Q:      filepath.Join(dir, "q.bin"),
			K:      filepath.Join(dir, "k.bin"),
			V:      filepath.Join(dir, "v.bin"),
			Output: filepath.Join(dir, "o.bin"),
		},
	}
	size := shape.DType.Size()
	var tensors [3][]byte
	for i, elements := range []int{shape.QElements(), shape.KVElements(), shape.KVElements()} {
		tensors[i] = make([]byte, elements*size)
		rand.Read(tensors[i])
	}
	for i, path := range []string{request.Files.Q, request.Files.K, request.Files.V} {
		if err := os.WriteFile(path, tensors[i], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	request.InputSHA256 = testbackend.InputSHA256(tensors[0], tensors[1], tensors[2])
	prepared, err := backend.Prepare(context.Background(), request)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if prepared.LoadedSHA256 != request.InputSHA256 {
		t.Fatalf("LoadedSHA256 = %s, want %s", prepared.LoadedSHA256, request.InputSHA256)
	}
	return request
}

var smallShape = sdk.Shape{Batch: 1, Heads: 4, KVHeads: 2, SeqQ: 16, SeqK: 32, HeadDim: 8, Causal: true, DType: sdk.FP16}

var quickMeasurement = sdk.Measurement{WarmupRuns: 2, MinSamples: 5, MaxSamples: 10, TimeCap: time.Second, L2: sdk.L2Hot, CallSamples: 3}

func TestPluginLifecycle(t *testing.T) {
	backend, client, stderr := startPlugin(t, "echo")
	ctx := context.Background()

	description, err := backend.Describe(ctx)
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	if description.Name != "test-echo" || len(description.Variants) != 1 || !description.Variants[0].Capabilities.GroupedQueryHeads {
		t.Fatalf("Describe = %+v", description)
	}

	request := prepareCase(t, backend, "test-echo", smallShape)
	if _, err := backend.Fetch(ctx, sdk.FetchRequest{CaseID: "c1"}); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	output, _ := os.ReadFile(request.Files.Output)
	q, _ := os.ReadFile(request.Files.Q)
	if !bytes.Equal(output, q) {
		t.Errorf("the echo plugin's output is not Q")
	}

	samples, err := backend.Run(ctx, sdk.RunRequest{CaseID: "c1", Measurement: quickMeasurement})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := len(samples.KernelTimes); n < quickMeasurement.MinSamples || n > quickMeasurement.MaxSamples {
		t.Errorf("%d kernel times, want %d to %d", n, quickMeasurement.MinSamples, quickMeasurement.MaxSamples)
	}
	if len(samples.CallTimes) != quickMeasurement.CallSamples || samples.Method == "" {
		t.Errorf("Run = %+v", samples)
	}

	if err := backend.Release(ctx, sdk.ReleaseRequest{CaseID: "c1"}); err != nil {
		t.Fatalf("Release: %v", err)
	}
	err = backend.Release(ctx, sdk.ReleaseRequest{CaseID: "c1"})
	if err == nil || err.Error() != `unknown case "c1"` || errors.Is(err, sdk.ErrPluginDied) {
		t.Errorf("second Release: err = %v, want the plugin's own message", err)
	}

	client.Kill()
	if !strings.Contains(stderr.String(), `"backend closed"`) {
		t.Errorf("Serve did not close the backend; stderr:\n%s", stderr)
	}
}

func TestPluginAcceptsLargeMessages(t *testing.T) {
	backend, _, _ := startPlugin(t, "echo")
	request := prepareCase(t, backend, "test-echo", smallShape)
	// Beyond gRPC's default 4 MiB receive limit, within MaxMessageBytes.
	request.Tunables = map[string]string{"large": strings.Repeat("x", 6<<20)}
	if _, err := backend.Prepare(context.Background(), request); err != nil {
		t.Fatalf("Prepare with a 6 MiB request: %v", err)
	}
}

func TestPluginCrashIsErrPluginDied(t *testing.T) {
	backend, client, stderr := startPlugin(t, "crash")
	prepareCase(t, backend, "test-crash", smallShape)

	_, err := backend.Run(context.Background(), sdk.RunRequest{CaseID: "c1", Measurement: quickMeasurement})
	if !errors.Is(err, sdk.ErrPluginDied) {
		t.Fatalf("Run on a crashing plugin: err = %v, want errors.Is ErrPluginDied", err)
	}
	if _, err := backend.Describe(context.Background()); !errors.Is(err, sdk.ErrPluginDied) {
		t.Errorf("Describe after the crash: err = %v, want errors.Is ErrPluginDied", err)
	}
	client.Kill() // waits until the plugin's stderr is read to the end
	if !strings.Contains(stderr.String(), "boom: simulated crash") {
		t.Errorf("the crash message is not in stderr:\n%s", stderr)
	}
}

func TestPluginHangStopsAtTheDeadline(t *testing.T) {
	backend, client, _ := startPlugin(t, "hang")
	prepareCase(t, backend, "test-hang", smallShape)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := backend.Run(ctx, sdk.RunRequest{CaseID: "c1", Measurement: quickMeasurement})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run on a hanging plugin: err = %v, want errors.Is context.DeadlineExceeded", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("Run returned %v after a 200ms deadline", elapsed)
	}
	// Calls never overlap, so a call behind the hung one fails at its own
	// deadline too.
	describeCtx, cancelDescribe := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelDescribe()
	if _, err := backend.Describe(describeCtx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Describe behind the hung Run: err = %v, want errors.Is context.DeadlineExceeded", err)
	}
	start = time.Now()
	client.Kill()
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("killing the hung plugin took %v", elapsed)
	}
}

func TestPluginSeesTheHostsDeadline(t *testing.T) {
	backend, _, stderr := startPlugin(t, "echo")
	prepareCase(t, backend, "test-echo", smallShape)

	endless := sdk.Measurement{MinSamples: 1 << 30, MaxSamples: 1 << 30, TimeCap: time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := backend.Run(ctx, sdk.RunRequest{CaseID: "c1", Measurement: endless}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run: err = %v, want errors.Is context.DeadlineExceeded", err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(stderr.String(), `"run stopped"`) {
			return
		}
	}
	t.Errorf("the plugin never saw its context end; stderr:\n%s", stderr)
}

func TestPluginOutputsOfMisbehavingPlugins(t *testing.T) {
	cases := []struct {
		plugin  string
		variant string
		check   func(output []byte) error
	}{
		{"zeros", "test-zeros", func(output []byte) error {
			if !bytes.Equal(output, make([]byte, len(output))) {
				return errors.New("output is not all zeros")
			}
			return nil
		}},
		{"nan", "test-nan", func(output []byte) error {
			if !bytes.Equal(output, bytes.Repeat([]byte{0x00, 0x7E}, len(output)/2)) {
				return errors.New("output is not all fp16 quiet NaNs")
			}
			return nil
		}},
	}
	for _, c := range cases {
		t.Run(c.plugin, func(t *testing.T) {
			backend, _, _ := startPlugin(t, c.plugin)
			request := prepareCase(t, backend, c.variant, smallShape)
			if _, err := backend.Fetch(context.Background(), sdk.FetchRequest{CaseID: "c1"}); err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			output, err := os.ReadFile(request.Files.Output)
			if err != nil {
				t.Fatal(err)
			}
			if len(output) != smallShape.QElements()*smallShape.DType.Size() {
				t.Fatalf("output has %d bytes", len(output))
			}
			if err := c.check(output); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestPluginPrintingToStdoutFailsTheHandshake(t *testing.T) {
	stderr := &syncBuffer{}
	client := plugin.NewClient(sdk.ClientConfig(exec.Command(pluginPath(t, "stdout")), stderr, nil))
	defer client.Kill()
	_, err := sdk.Dispense(client)
	if err == nil {
		t.Fatal("Dispense succeeded with a plugin that printed to stdout first")
	}
	for _, want := range []string{"Unrecognized remote plugin message", "simulated banner on stdout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to contain %q", err, want)
		}
	}
}

func TestPluginDebugModeReattach(t *testing.T) {
	cmd := exec.Command(pluginPath(t, "echo"))
	cmd.Env = append(os.Environ(), sdk.DebugEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()

	value, err := readReattachLine(stdout)
	if err != nil {
		t.Fatal(err)
	}
	reattach, err := sdk.ParseReattach(value)
	if err != nil {
		t.Fatal(err)
	}
	for run := range 2 { // the plugin outlives the first host's client
		config := sdk.ClientConfig(nil, nil, nil)
		config.Reattach = reattach
		client := plugin.NewClient(config)
		backend, err := sdk.Dispense(client)
		if err != nil {
			t.Fatalf("host run %d: reattach: %v", run, err)
		}
		if description, err := backend.Describe(context.Background()); err != nil || description.Name != "test-echo" {
			t.Errorf("host run %d: Describe = %+v, %v", run, description, err)
		}
		client.Kill()
	}
}

// readReattachLine reads a debug-mode plugin's stdout up to the line that
// sets sdk.ReattachEnv and returns the quoted value.
func readReattachLine(stdout interface{ Read([]byte) (int, error) }) (string, error) {
	lines := make(chan string)
	go func() {
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			line := strings.TrimSpace(scanner.Text())
			if value, ok := strings.CutPrefix(line, sdk.ReattachEnv+"="); ok {
				lines <- strings.Trim(value, "'")
				return
			}
		}
		close(lines)
	}()
	select {
	case value, ok := <-lines:
		if !ok {
			return "", errors.New("the plugin exited without printing " + sdk.ReattachEnv)
		}
		return value, nil
	case <-time.After(30 * time.Second):
		return "", errors.New("no " + sdk.ReattachEnv + " line within 30s")
	}
}
