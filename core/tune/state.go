package tune

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// StateVersion is the version of the state file's format.
const StateVersion = 1

// State is everything a search needs to go on after an interrupt: what it
// searches, its settings, and each case's search with its random source.
type State struct {
	Version     int       `json:"version"`
	Backend     string    `json:"backend"`
	Variant     string    `json:"variant"`
	Seed        uint64    `json:"seed"`
	SuiteSHA256 string    `json:"suite_sha256"`
	Settings    Settings  `json:"settings"`
	Searches    []*Search `json:"searches"`
}

// NewState starts a search of backend's variant with seed.
func NewState(backend, variant string, seed uint64, suiteSHA256 string, settings Settings) *State {
	return &State{Version: StateVersion, Backend: backend, Variant: variant, Seed: seed,
		SuiteSHA256: suiteSHA256, Settings: settings}
}

// search returns the case's search, started when there is none yet.
func (st *State) search(caseID string) (*Search, error) {
	for _, s := range st.Searches {
		if s.CaseID == caseID {
			return s, nil
		}
	}
	s, err := newSearch(caseID, st.Seed)
	if err != nil {
		return nil, err
	}
	st.Searches = append(st.Searches, s)
	return s, nil
}

// Evaluations counts the evaluations of every case.
func (st *State) Evaluations() int {
	n := 0
	for _, s := range st.Searches {
		n += len(s.Evaluations)
	}
	return n
}

// Matches says why a saved state cannot be resumed with these choices; ""
// when it can.
func (st *State) Matches(backend, variant, suiteSHA256 string) string {
	switch {
	case st.Backend != backend:
		return fmt.Sprintf("it is a search of backend %s, not %s", st.Backend, backend)
	case st.Variant != variant:
		return fmt.Sprintf("it is a search of variant %s, not %s", st.Variant, variant)
	case st.SuiteSHA256 != suiteSHA256:
		return "it was started with another suite file (its SHA-256 differs)"
	}
	return ""
}

// LoadState reads a state file. A missing file is reported with
// os.ErrNotExist, so a caller can start afresh.
func LoadState(path string) (*State, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("%s: not a tune state file: %w", path, err)
	}
	if st.Version != StateVersion {
		return nil, fmt.Errorf("%s: state version %d, this build reads %d", path, st.Version, StateVersion)
	}
	if st.Settings.Population < 1 || st.Settings.Tournament < 1 {
		return nil, fmt.Errorf("%s: settings %+v: population and tournament must be at least 1", path, st.Settings)
	}
	return &st, nil
}

// Save writes the state to path through a temporary file and a rename, so
// a search killed while saving leaves the previous state, never half of
// one.
func (st *State) Save(path string) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	_, werr := tmp.Write(append(data, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("save state: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("save state: %w", err)
	}
	return nil
}
