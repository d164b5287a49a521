package cli

import (
	"errors"
)

// Exit codes of flashcore, as the README lists them:
const (
	ExitOK          = 0   // every available backend ran and passed
	ExitFindings    = 1   // some row FAILed its correctness check
	ExitUsage       = 2   // bad arguments, or a suite that does not parse or validate
	ExitFailures    = 3   // some row is an ERROR (crash, hang, broken contract, implausible times), or a plugin faulted at start
	ExitOther       = 4   // anything else: an unreadable file, no plugins found, ...
	ExitUnavailable = 5   // a backend named with --backends is unavailable (e.g. no CUDA device)
	ExitGate        = 6   // flashcore gate: a row FAILed a gate
	ExitInterrupted = 130 // interrupted (Ctrl-C); the partial results file is valid
)

// exitError carries an exit code with its message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// ExitCode maps an error returned by Main to the process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return ExitOther
}
