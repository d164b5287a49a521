package sdk

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// These tests run the real gRPC server and client of the transport in one
// process, with a backend that records what arrives, so they can look at
// both ends of each call. transport_test.go runs real plugin processes.

// recordingBackend answers with the convert_test fixtures and keeps the
// requests it was given. Its Run can be replaced to block or fail.
type recordingBackend struct {
	mu       sync.Mutex
	requests []any
	run      func(ctx context.Context) error
	err      error // returned by every call when set
}

func (b *recordingBackend) record(request any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests = append(b.requests, request)
}

func (b *recordingBackend) Describe(ctx context.Context) (Description, error) {
	return fixtureDescription(), b.err
}

func (b *recordingBackend) Prepare(_ context.Context, request PrepareRequest) (Prepared, error) {
	b.record(request)
	return fixturePrepared(), b.err
}

func (b *recordingBackend) Fetch(_ context.Context, request FetchRequest) (Fetched, error) {
	b.record(request)
	return Fetched{Diagnostics: fixtureDiagnostics()}, b.err
}

func (b *recordingBackend) Run(ctx context.Context, request RunRequest) (Samples, error) {
	b.record(request)
	if b.run != nil {
		return Samples{}, b.run(ctx)
	}
	return fixtureSamples(), b.err
}

func (b *recordingBackend) Release(_ context.Context, request ReleaseRequest) error {
	b.record(request)
	return b.err
}

// connect serves backend over an in-process gRPC connection and returns
// the host's view of it.
func connect(t *testing.T, backend Backend) Backend {
	t.Helper()
	plugins := map[string]plugin.Plugin{PluginName: &backendPlugin{newBackend: func() Backend { return backend }}}
	client, _ := plugin.TestPluginGRPCConn(t, false, plugins) // client.Close stops the server
	t.Cleanup(func() { _ = client.Close() })
	raw, err := client.Dispense(PluginName)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(Backend)
}

func TestTransportCarriesEveryField(t *testing.T) {
	backend := &recordingBackend{}
	host := connect(t, backend)
	ctx := context.Background()

	description, err := host.Describe(ctx)
	if err != nil || !reflect.DeepEqual(description, fixtureDescription()) {
		t.Errorf("Describe = %+v, %v", description, err)
	}
	prepared, err := host.Prepare(ctx, fixturePrepareRequest())
	if err != nil || !reflect.DeepEqual(prepared, fixturePrepared()) {
		t.Errorf("Prepare = %+v, %v", prepared, err)
	}
	fetched, err := host.Fetch(ctx, FetchRequest{CaseID: "case-0009"})
	if err != nil || !reflect.DeepEqual(fetched, Fetched{Diagnostics: fixtureDiagnostics()}) {
		t.Errorf("Fetch = %+v, %v", fetched, err)
	}
	samples, err := host.Run(ctx, fixtureRunRequest())
	// Serve adds the Run's phases to its facts (phases.go).
	if _, ok := samples.Facts[PhasesFact]; !ok {
		t.Errorf("Run's facts have no %q: %v", PhasesFact, samples.Facts)
	}
	delete(samples.Facts, PhasesFact)
	if err != nil || !reflect.DeepEqual(samples, fixtureSamples()) {
		t.Errorf("Run = %+v, %v", samples, err)
	}
	if err := host.Release(ctx, ReleaseRequest{CaseID: "case-0010"}); err != nil {
		t.Errorf("Release: %v", err)
	}

	want := []any{fixturePrepareRequest(), FetchRequest{CaseID: "case-0009"}, fixtureRunRequest(), ReleaseRequest{CaseID: "case-0010"}}
	backend.mu.Lock()
	defer backend.mu.Unlock()
	if !reflect.DeepEqual(backend.requests, want) {
		t.Errorf("the backend received\n%+v\nwant\n%+v", backend.requests, want)
	}
}

func TestTransportKeepsTheBackendsErrorText(t *testing.T) {
	const text = "cuda-v8: cuMemAlloc 4294967296 bytes: CUDA_ERROR_OUT_OF_MEMORY"
	host := connect(t, &recordingBackend{err: errors.New(text)})
	ctx := context.Background()
	calls := map[string]func() error{
		"Describe": func() error { _, err := host.Describe(ctx); return err },
		"Prepare":  func() error { _, err := host.Prepare(ctx, PrepareRequest{}); return err },
		"Fetch":    func() error { _, err := host.Fetch(ctx, FetchRequest{}); return err },
		"Run":      func() error { _, err := host.Run(ctx, RunRequest{}); return err },
		"Release":  func() error { return host.Release(ctx, ReleaseRequest{}) },
	}
	for name, call := range calls {
		err := call()
		if err == nil || err.Error() != text {
			t.Errorf("%s: err = %v, want %q", name, err, text)
		}
		if errors.Is(err, ErrPluginDied) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			t.Errorf("%s: a backend's own error is marked as a transport failure: %v", name, err)
		}
	}
}

// blockUntilDone is a Run that waits for its context and reports the
// context's error on seen.
func blockUntilDone(seen chan<- error) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		<-ctx.Done()
		seen <- ctx.Err()
		return ctx.Err()
	}
}

func TestTransportPassesTheHostsContextToTheBackend(t *testing.T) {
	cases := []struct {
		name    string
		end     func(cancel context.CancelFunc) // how the host ends the call
		timeout time.Duration
		want    error
	}{
		{"deadline", func(context.CancelFunc) {}, 50 * time.Millisecond, context.DeadlineExceeded},
		{"cancel", func(cancel context.CancelFunc) { time.AfterFunc(50*time.Millisecond, cancel) }, time.Minute, context.Canceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			seen := make(chan error, 1)
			host := connect(t, &recordingBackend{run: blockUntilDone(seen)})
			ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
			defer cancel()
			c.end(cancel)

			_, err := host.Run(ctx, RunRequest{CaseID: "c"})
			if !errors.Is(err, c.want) {
				t.Errorf("host got %v, want errors.Is %v", err, c.want)
			}
			select {
			case backendErr := <-seen:
				// The host's end of the call resets the stream, which can
				// reach the plugin before the plugin's own copy of the
				// deadline fires, so the backend may see either error.
				if backendErr == nil {
					t.Errorf("backend's context ended without an error")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the backend's context never ended")
			}
		})
	}
}

func TestTransportNeverOverlapsCalls(t *testing.T) {
	var active, most atomic.Int32
	backend := &recordingBackend{run: func(context.Context) error {
		n := active.Add(1)
		defer active.Add(-1)
		if n > most.Load() {
			most.Store(n)
		}
		time.Sleep(10 * time.Millisecond)
		return nil
	}}
	host := connect(t, backend)
	var calls sync.WaitGroup
	for range 4 {
		calls.Go(func() {
			if _, err := host.Run(context.Background(), RunRequest{}); err != nil {
				t.Error(err)
			}
		})
	}
	calls.Wait()
	if most.Load() != 1 {
		t.Errorf("%d calls ran at once, want 1", most.Load())
	}
}

func TestErrorFromStatus(t *testing.T) {
	cases := []struct {
		name     string
		err      error
		wantText string
		wantIs   error
	}{
		{"backend error", status.Error(codes.Unknown, "bad tile size"), "bad tile size", nil},
		{"plugin died", status.Error(codes.Unavailable, "error reading from server: EOF"), "plugin died: error reading from server: EOF", ErrPluginDied},
		{"deadline", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), "context deadline exceeded", context.DeadlineExceeded},
		{"canceled", status.Error(codes.Canceled, "context canceled"), "context canceled", context.Canceled},
		{"too large", status.Error(codes.ResourceExhausted, "message larger than max"), "plugin transport: ResourceExhausted: message larger than max", nil},
		{"not a status", errors.New("plain"), "plain", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := errorFromStatus(c.err)
			if err.Error() != c.wantText {
				t.Errorf("text = %q, want %q", err.Error(), c.wantText)
			}
			if c.wantIs != nil && !errors.Is(err, c.wantIs) {
				t.Errorf("%v is not %v", err, c.wantIs)
			}
			if _, isStatus := status.FromError(err); isStatus && c.name != "not a status" {
				t.Errorf("%v still carries a gRPC status", err)
			}
		})
	}
}

func TestErrorToStatusMarksOnlyTheCallsOwnContext(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name string
		ctx  context.Context
		err  error
		want codes.Code
	}{
		{"backend error", context.Background(), errors.New("boom"), codes.Unknown},
		{"call canceled", ended, context.Canceled, codes.Canceled},
		{"wrapped cancel", ended, errors.Join(errors.New("sample 3"), context.Canceled), codes.Canceled},
		// A backend's own internal timeout is an error of the backend, not
		// the host's deadline.
		{"backend's own deadline", context.Background(), context.DeadlineExceeded, codes.Unknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := status.Convert(errorToStatus(c.ctx, c.err))
			if got.Code() != c.want || got.Message() != c.err.Error() {
				t.Errorf("status = %v %q, want %v %q", got.Code(), got.Message(), c.want, c.err.Error())
			}
		})
	}
}

func TestParseReattachRoundTrips(t *testing.T) {
	value := `{"protocol":"grpc","protocol_version":1,"pid":42,"network":"unix","address":"/tmp/plugin1"}`
	rc, err := ParseReattach(value)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Protocol != plugin.ProtocolGRPC || rc.ProtocolVersion != 1 || rc.Pid != 42 || !rc.Test || rc.Addr.String() != "/tmp/plugin1" {
		t.Errorf("ParseReattach = %+v", rc)
	}
	again, err := formatReattach(rc)
	if err != nil || again != value {
		t.Errorf("formatReattach = %s, %v; want %s", again, err, value)
	}
	if _, err := ParseReattach(`{"network":"carrier-pigeon"}`); err == nil || !strings.Contains(err.Error(), ReattachEnv) {
		t.Errorf("bad network: err = %v, want one naming %s", err, ReattachEnv)
	}
}
