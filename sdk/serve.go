package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flashcore/bench/internal/pb"
)

// Handshake is what host and plugin check before they talk. The magic cookie
// only tells a user who runs a plugin binary by hand that it is a plugin;
// ProtocolVersion refuses a plugin built against another protocol.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "FLASHCORE_PLUGIN",
	MagicCookieValue: "flashcore-attention-backend-v1-7c2e9d41",
}

// MaxMessageBytes is the largest gRPC message either side sends or accepts.
// Tensors travel as files, but diagnostics and sample lists can exceed
// gRPC's default 4 MiB receive limit.
const MaxMessageBytes = 256 << 20

// Environment variables a plugin reads.
const (
	// DebugEnv set to 1 makes Serve run the plugin in debug mode: started
	// by hand (for example under a debugger), it prints a ReattachEnv line
	// for the host and serves until interrupted.
	DebugEnv = "FLASHCORE_PLUGIN_DEBUG"
	// ReattachEnv names the variable that carries the reattach
	// configuration a debug-mode plugin prints; see ParseReattach.
	ReattachEnv = "FLASHCORE_PLUGIN_REATTACH"
	// LogLevelEnv sets the plugin's log level: trace, debug, info (the
	// default), warn or error.
	LogLevelEnv = "FLASHCORE_PLUGIN_LOG_LEVEL"
)

// Serve is the one call a plugin's main makes:
//
//	func main() { sdk.Serve(mybackend.New) }
//
// It answers the host's handshake, serves the Backend made by newBackend
// over gRPC and returns when the host ends the plugin, after calling Close
// if the backend implements Closer. newBackend is called once, after the
// check that a host started the plugin, so a binary run by hand exits with
// a hint before constructing anything. Errors the backend returns reach the
// host with their text.
//
// Stdout belongs to the handshake: a plugin must not print to it before
// Serve. Afterwards os.Stdout and os.Stderr are forwarded to the host.
// Log through Logger.
func Serve(newBackend func() Backend) {
	logger := Logger()
	served := &backendPlugin{newBackend: newBackend}
	config := &plugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         plugin.PluginSet{PluginName: served},
		GRPCServer:      newGRPCServer,
		Logger:          logger,
	}
	if debugMode() {
		serveDebug(config, logger)
	} else {
		plugin.Serve(config)
	}
	served.closeBackend(logger)
}

var (
	loggerOnce   sync.Once
	pluginLogger hclog.Logger
)

// Logger is the plugin's logger. It writes to the process's stderr, which
// the host reads: JSON lines that the host re-logs at their level (plain
// text in debug mode). Its level comes from LogLevelEnv.
func Logger() hclog.Logger {
	loggerOnce.Do(func() {
		level := hclog.LevelFromString(os.Getenv(LogLevelEnv))
		if level == hclog.NoLevel {
			level = hclog.Info
		}
		pluginLogger = hclog.New(&hclog.LoggerOptions{
			Level:      level,
			Output:     os.Stderr, // captured now, before Serve redirects os.Stderr
			JSONFormat: !debugMode(),
		})
	})
	return pluginLogger
}

func debugMode() bool { return os.Getenv(DebugEnv) == "1" }

// newGRPCServer is the plugin's gRPC server, with the message limits raised.
func newGRPCServer(options []grpc.ServerOption) *grpc.Server {
	options = append(options,
		grpc.MaxRecvMsgSize(MaxMessageBytes),
		grpc.MaxSendMsgSize(MaxMessageBytes),
	)
	return grpc.NewServer(options...)
}

// serveDebug serves in go-plugin's reattach mode: the plugin runs on its
// own (under a debugger, say) and prints how the host can attach to it.
func serveDebug(config *plugin.ServeConfig, logger hclog.Logger) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reattach := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	config.Test = &plugin.ServeTestConfig{Context: ctx, ReattachConfigCh: reattach, CloseCh: closed}
	go plugin.Serve(config)
	select {
	case <-closed:
		return // serving failed to start; go-plugin logged why
	case rc := <-reattach:
		value, err := formatReattach(rc)
		if err != nil {
			logger.Error("debug mode", "error", err)
			stop()
			break
		}
		fmt.Printf("Serving in debug mode. Attach the host to this plugin with:\n\n\t%s='%s'\n\nStop with Ctrl-C.\n", ReattachEnv, value)
	}
	<-closed
}

// backendPlugin is the go-plugin glue on both sides: the plugin serves the
// Backend that newBackend makes, the host dispenses a backendClient.
type backendPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	newBackend func() Backend // nil on the host side
	backend    Backend        // made once serving starts
}

func (p *backendPlugin) GRPCServer(_ *plugin.GRPCBroker, server *grpc.Server) error {
	if p.newBackend == nil {
		return errors.New("sdk: no backend to serve")
	}
	p.backend = p.newBackend()
	if p.backend == nil {
		return errors.New("sdk: newBackend returned nil")
	}
	pb.RegisterBackendServer(server, newBackendServer(p.backend))
	return nil
}

func (p *backendPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &backendClient{rpc: pb.NewBackendClient(conn)}, nil
}

// closeBackend closes the backend as its process exits: CloseForExit
// where it has one (ExitCloser), else Close where it has that.
func (p *backendPlugin) closeBackend(logger hclog.Logger) {
	if err := closeForExit(p.backend); err != nil {
		logger.Error("close backend", "error", err)
	}
}

func closeForExit(b Backend) error {
	if closer, ok := b.(ExitCloser); ok {
		return closer.CloseForExit()
	}
	if closer, ok := b.(Closer); ok {
		return closer.Close()
	}
	return nil
}

// backendServer serves a Backend over gRPC. Each call passes on the gRPC
// context, which ends when the host cancels the call or its deadline passes.
// gRPC serves calls concurrently; backendServer runs them one at a time, so
// a backend can rely on Backend's promise that calls never overlap.
type backendServer struct {
	pb.UnimplementedBackendServer
	backend Backend
	turn    chan struct{} // holds a token while a call runs
}

func newBackendServer(backend Backend) *backendServer {
	return &backendServer{backend: backend, turn: make(chan struct{}, 1)}
}

// wait takes the turn, or gives up when ctx ends first: behind a call that
// never returns, later calls fail at their own deadlines.
func (s *backendServer) wait(ctx context.Context) error {
	select {
	case s.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

func (s *backendServer) done() { <-s.turn }

func (s *backendServer) Describe(ctx context.Context, _ *pb.DescribeRequest) (*pb.Description, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	defer s.done()
	description, err := s.backend.Describe(ctx)
	if err != nil {
		return nil, errorToStatus(ctx, err)
	}
	return descriptionToProto(description), nil
}

func (s *backendServer) Prepare(ctx context.Context, request *pb.PrepareRequest) (*pb.Prepared, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	defer s.done()
	prepared, err := s.backend.Prepare(ctx, prepareRequestFromProto(request))
	if err != nil {
		return nil, errorToStatus(ctx, err)
	}
	return preparedToProto(prepared), nil
}

func (s *backendServer) Fetch(ctx context.Context, request *pb.FetchRequest) (*pb.Fetched, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	defer s.done()
	fetched, err := s.backend.Fetch(ctx, fetchRequestFromProto(request))
	if err != nil {
		return nil, errorToStatus(ctx, err)
	}
	return fetchedToProto(fetched), nil
}

func (s *backendServer) Run(ctx context.Context, request *pb.RunRequest) (*pb.Samples, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	defer s.done()
	clock := NewPhaseClock()
	samples, err := s.backend.Run(WithPhaseClock(ctx, clock), runRequestFromProto(request))
	if err != nil {
		return nil, errorToStatus(ctx, err)
	}
	return samplesToProto(withPhases(samples, clock)), nil
}

func (s *backendServer) Release(ctx context.Context, request *pb.ReleaseRequest) (*pb.ReleaseResponse, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	defer s.done()
	if err := s.backend.Release(ctx, releaseRequestFromProto(request)); err != nil {
		return nil, errorToStatus(ctx, err)
	}
	return &pb.ReleaseResponse{}, nil
}

// errorToStatus turns a backend's error into a gRPC status that keeps its
// text. It is codes.Unknown, the code of an application error, unless the
// error comes from the call's context ending: then it is Canceled or
// DeadlineExceeded, so the host can tell its own deadline from a failure.
func errorToStatus(ctx context.Context, err error) error {
	code := codes.Unknown
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		code = status.FromContextError(ctxErr).Code()
	}
	return status.Error(code, err.Error())
}

// reattachJSON is the form of ReattachEnv's value.
type reattachJSON struct {
	Protocol        string `json:"protocol"`
	ProtocolVersion int    `json:"protocol_version"`
	Pid             int    `json:"pid"`
	Network         string `json:"network"`
	Address         string `json:"address"`
}

func formatReattach(rc *plugin.ReattachConfig) (string, error) {
	value, err := json.Marshal(reattachJSON{
		Protocol:        string(rc.Protocol),
		ProtocolVersion: rc.ProtocolVersion,
		Pid:             rc.Pid,
		Network:         rc.Addr.Network(),
		Address:         rc.Addr.String(),
	})
	return string(value), err
}

// withPhases adds the Run's phases to its facts (PhasesFact), unless the
// backend wrote its own report there (the Python bridges relay their
// worker's).
func withPhases(samples Samples, clock *PhaseClock) Samples {
	if _, ok := samples.Facts[PhasesFact]; ok {
		return samples
	}
	phases := clock.Phases()
	if len(phases) == 0 {
		return samples
	}
	facts := make(map[string]string, len(samples.Facts)+1)
	for k, v := range samples.Facts {
		facts[k] = v
	}
	facts[PhasesFact] = EncodePhases(phases)
	samples.Facts = facts
	return samples
}
