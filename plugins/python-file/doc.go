// Package pythonfile serves a backend written as one Python file: the host
// starts it once per such backend, with --name NAME --file FILE (README.md).
//
// Where to start: backend.go reads those arguments and configures the
// shared Python bridge (internal/bridge) with its pyfile_backend module,
// which loads the file.
//
// New is the backend the plugin serves: on its own from
// cmd/flashcore-backend-python-file (go build ./plugins/python-file/...), or
// from a multi-call binary (cmd/flashcore-plugins).
package pythonfile
