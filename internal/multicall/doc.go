// Package multicall puts several plugins into one binary, to keep an
// install small: each plugin binary carries its own copy of the Go runtime,
// gRPC and the SDK, so eight of them weigh about eight times one.
//
// A multi-call binary is still started once per plugin, as its own process:
// the host finds it under each plugin's file name, flashcore-backend-NAME,
// through a symbolic link, and Main picks the plugin from the name the
// process was started under (argv[0]). Started by hand it also takes the
// plugin's name as its first argument: flashcore-plugins NAME [ARGS].
//
// The plugins themselves are unchanged: each plugins/NAME folder stays a
// main package that a single-plugin binary is built from (go build
// ./plugins/NAME). Go cannot import a main package, so the multi-call
// binary is built through an overlay (go build -overlay, see Overlay): for
// that one build, each plugin's files are compiled as a package named
// after the plugin, its func main renamed Main, and a generated file
// registers every plugin with cmd/flashcore-plugins. Adding a plugin
// folder is all it takes to add it to the binary.
//
// Where to start: Main dispatches; Overlay writes the build's overlay.
package multicall
