// Package suites holds the suites that ship with FlashCore bench. Where to
// start: default.toml is the suite a run uses when it names none; package
// core/suite parses it (suite.Default).
package suites

import "embed"

// FS holds every *.toml file of this folder.
//
//go:embed *.toml
var FS embed.FS
