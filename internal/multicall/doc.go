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
// Each plugins/NAME folder is a library package that exports its backend's
// constructor, New, with a thin main of its own in
// plugins/NAME/cmd/flashcore-backend-NAME. A multi-call binary imports the
// plugin packages and lists them: cmd/flashcore-plugins holds the plugins
// that need no CUDA, cmd/flashcore-plugins-cuda those that do. A test of
// plugins/ fails when a plugin folder is in neither list, or in the wrong
// one.
//
// Where to start: Main dispatches; Select is the choice it makes.
package multicall
