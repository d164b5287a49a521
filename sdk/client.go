package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flashcore/bench/internal/pb"
)

// PluginName is the name under which a plugin serves its Backend.
const PluginName = "backend"

// startTimeout is how long the host waits for a plugin's handshake.
const startTimeout = 60 * time.Second

// ErrPluginDied marks a call that failed because the plugin process went
// away (it crashed, exited or was killed): errors.Is(err, ErrPluginDied).
var ErrPluginDied = errors.New("plugin died")

// PluginMap is the plugin set the host dispenses from.
func PluginMap() map[string]plugin.Plugin {
	return map[string]plugin.Plugin{PluginName: &backendPlugin{}}
}

// ClientConfig is the go-plugin configuration that starts cmd as a plugin:
// gRPC only, with the message limits raised. Everything the plugin writes to
// stderr, and to os.Stdout or os.Stderr after its handshake, goes to stderr
// (nil discards it); writes are serialised, so stderr need not be safe for
// concurrent use. The plugin's log lines also go to logger (nil: nowhere).
// The plugin inherits the host's environment; entries in cmd.Env lose to
// it. To attach to a plugin serving in debug mode instead, pass a nil cmd
// and set Reattach from ParseReattach.
func ClientConfig(cmd *exec.Cmd, stderr io.Writer, logger hclog.Logger) *plugin.ClientConfig {
	output := io.Discard
	if stderr != nil {
		output = &lockedWriter{w: stderr}
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          PluginMap(),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(MaxMessageBytes),
			grpc.MaxCallSendMsgSize(MaxMessageBytes),
		)},
		Stderr:       output,
		SyncStdout:   output,
		SyncStderr:   output,
		SkipHostEnv:  false,
		StartTimeout: startTimeout,
		Logger:       logger,
	}
}

// Dispense starts the plugin of c, if it is not running yet, and returns
// its Backend. Errors the plugin returns keep their text; a call that fails
// because the plugin died is errors.Is ErrPluginDied, and one stopped by its
// context is errors.Is context.DeadlineExceeded or context.Canceled.
func Dispense(c *plugin.Client) (Backend, error) {
	rpcClient, err := c.Client()
	if err != nil {
		return nil, err
	}
	raw, err := rpcClient.Dispense(PluginName)
	if err != nil {
		return nil, fmt.Errorf("dispense %q: %w", PluginName, err)
	}
	backend, ok := raw.(Backend)
	if !ok {
		return nil, fmt.Errorf("dispense %q: got %T, not an sdk.Backend", PluginName, raw)
	}
	return backend, nil
}

// ParseReattach reads the value of ReattachEnv that a plugin in debug mode
// prints, for ClientConfig's Reattach field.
func ParseReattach(value string) (*plugin.ReattachConfig, error) {
	var r reattachJSON
	if err := json.Unmarshal([]byte(value), &r); err != nil {
		return nil, fmt.Errorf("%s: %w", ReattachEnv, err)
	}
	var addr net.Addr
	var err error
	switch r.Network {
	case "unix":
		addr, err = net.ResolveUnixAddr(r.Network, r.Address)
	case "tcp":
		addr, err = net.ResolveTCPAddr(r.Network, r.Address)
	default:
		err = fmt.Errorf("unknown network %q", r.Network)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ReattachEnv, err)
	}
	return &plugin.ReattachConfig{
		Protocol:        plugin.Protocol(r.Protocol),
		ProtocolVersion: r.ProtocolVersion,
		Addr:            addr,
		Pid:             r.Pid,
		Test:            true, // the plugin, not the host, decides when it exits
	}, nil
}

// backendClient is the host's Backend: each call is one gRPC call.
type backendClient struct {
	rpc pb.BackendClient
}

var _ Backend = (*backendClient)(nil)

func (c *backendClient) Describe(ctx context.Context) (Description, error) {
	response, err := c.rpc.Describe(ctx, &pb.DescribeRequest{})
	if err != nil {
		return Description{}, errorFromStatus(err)
	}
	return cleanDescription(descriptionFromProto(response)), nil
}

func (c *backendClient) Prepare(ctx context.Context, request PrepareRequest) (Prepared, error) {
	response, err := c.rpc.Prepare(ctx, prepareRequestToProto(request))
	if err != nil {
		return Prepared{}, errorFromStatus(err)
	}
	return cleanPrepared(preparedFromProto(response)), nil
}

func (c *backendClient) Fetch(ctx context.Context, request FetchRequest) (Fetched, error) {
	response, err := c.rpc.Fetch(ctx, fetchRequestToProto(request))
	if err != nil {
		return Fetched{}, errorFromStatus(err)
	}
	fetched := fetchedFromProto(response)
	fetched.Diagnostics = cleanDiagnostics(fetched.Diagnostics)
	return fetched, nil
}

func (c *backendClient) Run(ctx context.Context, request RunRequest) (Samples, error) {
	response, err := c.rpc.Run(ctx, runRequestToProto(request))
	if err != nil {
		return Samples{}, errorFromStatus(err)
	}
	return cleanSamples(samplesFromProto(response)), nil
}

func (c *backendClient) Release(ctx context.Context, request ReleaseRequest) error {
	if _, err := c.rpc.Release(ctx, releaseRequestToProto(request)); err != nil {
		return errorFromStatus(err)
	}
	return nil
}

// errorFromStatus turns a gRPC error back into a plain Go error. The
// plugin's own errors (codes.Unknown) come back as their text alone.
// Transport failures are marked: a dead plugin with ErrPluginDied, an ended
// context with its context error.
func errorFromStatus(err error) error {
	s, ok := status.FromError(err)
	if !ok {
		return err
	}
	s = status.New(s.Code(), cleanMessage(s.Message()))
	switch s.Code() {
	case codes.Unknown:
		return errors.New(s.Message())
	case codes.Unavailable:
		return markError(ErrPluginDied, s.Message())
	case codes.DeadlineExceeded:
		return markError(context.DeadlineExceeded, s.Message())
	case codes.Canceled:
		return markError(context.Canceled, s.Message())
	}
	return fmt.Errorf("plugin transport: %s: %s", s.Code(), s.Message())
}

// markError wraps sentinel around message, unless message says no more.
func markError(sentinel error, message string) error {
	if message == "" || message == sentinel.Error() {
		return sentinel
	}
	return fmt.Errorf("%w: %s", sentinel, message)
}

// lockedWriter serialises the writes of go-plugin's goroutines that copy
// the plugin's stderr and forwarded stdio.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
