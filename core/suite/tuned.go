package suite

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/flashcore/bench/core/tomlpos"
)

// Tuned is a tuned-configuration file, as `flashcore tune` writes it and a
// suite names it ([[backends]] tuned = "best.toml"): for one backend
// variant, the tunables to use on each case. A case the file does not list
// runs with the backend's defaults.
//
//	backend = "cuda-v8"
//	variant = "cuda-v8"
//
//	[[cases]]
//	id = "b1-h8-s512-d64-fp16"
//	kernel_ns = 25800          # what the search measured; informational
//	default_kernel_ns = 28900
//	evaluations = 40
//	[cases.tunables]
//	tile_n = "64"
type Tuned struct {
	// Path is the file the configurations were read from.
	Path    string
	Backend string
	Variant string
	Cases   []TunedCase
}

// TunedCase is the best configuration found for one case.
type TunedCase struct {
	ID       string            `toml:"id"`
	Tunables map[string]string `toml:"tunables"`
	// KernelNs and DefaultKernelNs are the median kernel times the search
	// measured for this configuration and for the defaults; 0 when unknown.
	KernelNs        int64 `toml:"kernel_ns,omitzero"`
	DefaultKernelNs int64 `toml:"default_kernel_ns,omitzero"`
	Evaluations     int   `toml:"evaluations,omitzero"`
}

// For returns the tunables chosen for a case, or nil when the file has
// none for it.
func (t *Tuned) For(caseID string) map[string]string {
	if t == nil {
		return nil
	}
	for _, c := range t.Cases {
		if c.ID == caseID {
			return c.Tunables
		}
	}
	return nil
}

type tunedFile struct {
	Backend string      `toml:"backend"`
	Variant string      `toml:"variant"`
	Cases   []TunedCase `toml:"cases"`
}

// LoadTuned reads and validates a tuned-configuration file. Its errors
// are *Error values naming the file, the line and the key.
func LoadTuned(path string) (*Tuned, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read tuned configurations: %w", err)
	}
	return ParseTuned(path, data)
}

// ParseTuned validates a tuned-configuration file held in data; path names
// it in errors.
func ParseTuned(path string, data []byte) (*Tuned, error) {
	d := newDecoder(path, data)
	var syntax map[string]any
	if _, err := toml.Decode(d.doc, &syntax); err != nil {
		return nil, d.syntaxError(err)
	}
	d.lines = tomlpos.Scan(d.doc)
	var f tunedFile
	md, err := toml.Decode(d.doc, &f)
	if err != nil {
		return nil, d.valueError(err, -1)
	}
	for _, key := range md.Undecoded() {
		if len(key) >= 3 && key[0] == "cases" && key[1] == "tunables" {
			continue // tunable names belong to the backend
		}
		d.problems = append(d.problems, d.problemAt(key.String(), -1, "unknown key"))
	}
	if strings.TrimSpace(f.Backend) == "" {
		d.problem("backend", -1, "required: the backend the configurations are for")
	}
	if strings.TrimSpace(f.Variant) == "" {
		d.problem("variant", -1, "required: the variant the configurations are for")
	}
	seen := map[string]bool{}
	for i, c := range f.Cases {
		switch {
		case strings.TrimSpace(c.ID) == "":
			d.problem("cases.id", i, "required: the case ID, as flashcore run names it")
		case seen[c.ID]:
			d.problem("cases.id", i, "case %q is listed twice", c.ID)
		}
		seen[c.ID] = true
		if len(c.Tunables) == 0 {
			d.problem("cases.tunables", i, "required: a table of tunable names and values")
		}
	}
	if len(d.problems) > 0 {
		return nil, errors.Join(d.problems...)
	}
	return &Tuned{Path: path, Backend: f.Backend, Variant: f.Variant, Cases: f.Cases}, nil
}

// Encode writes t in the file format LoadTuned reads, cases in the order
// given and tunables sorted by name.
func (t *Tuned) Encode() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString("# Tuned configurations, one per case, written by flashcore tune.\n")
	buf.WriteString("# Name this file in a suite: [[backends]] tuned = \"<this file>\".\n")
	f := tunedFile{Backend: t.Backend, Variant: t.Variant, Cases: slices.Clone(t.Cases)}
	if err := toml.NewEncoder(&buf).Encode(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
