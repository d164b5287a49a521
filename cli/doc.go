// Package cli is the flashcore command: Main parses the arguments and runs
// one subcommand (run, list, describe, report, compare, verify-timing,
// profile, gate, ablate, calibrate, roofline, version). It writes only to the writers it is given and returns
// an error carrying the exit code, so the whole command is testable
// without a process. Start at Main.
package cli
