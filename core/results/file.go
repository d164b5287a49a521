package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/flashcore/bench/ops/attention"
)

// Writer saves a run to one file, replacing it atomically on every Save:
// a reader (or a run killed mid-save) sees either the previous complete
// file or the new complete file, never a mix or a truncated one.
type Writer struct {
	path string
	mu   sync.Mutex
	// writeTemp writes the encoded run into the temporary file. Tests
	// replace it to stop a save halfway.
	writeTemp func(f *os.File, data []byte) error
}

// NewWriter returns a Writer for path. It touches nothing until Save.
func NewWriter(path string) *Writer {
	return &Writer{path: path, writeTemp: writeAll}
}

// Path is the file the Writer saves to.
func (w *Writer) Path() string { return w.path }

// Save encodes run and replaces the file with it: it writes a temporary
// file in the same directory, syncs it to disk, renames it over the file
// and syncs the directory. A process killed during Save may leave a
// ".NAME.tmp-*" file next to the results, never a damaged results file.
func (w *Writer) Save(run *Run) error {
	data, err := Marshal(run)
	if err != nil {
		return fmt.Errorf("save %s: encode: %w", w.path, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.replace(data); err != nil {
		return fmt.Errorf("save %s: %w", w.path, err)
	}
	return nil
}

func (w *Writer) replace(data []byte) error {
	dir := filepath.Dir(w.path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(w.path)+".tmp-*")
	if err != nil {
		return err
	}
	if err := w.fillTemp(tmp, data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), w.path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return syncDir(dir)
}

// fillTemp writes data, makes the file readable like any other output and
// waits until the bytes are on disk, so that the rename never publishes a
// file whose content could still be lost.
func (w *Writer) fillTemp(tmp *os.File, data []byte) error {
	if err := w.writeTemp(tmp, data); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	return tmp.Close()
}

func writeAll(f *os.File, data []byte) error {
	_, err := f.Write(data)
	return err
}

// syncDir makes the rename itself durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ErrUnsupportedSchema is wrapped by Load's error for a file whose
// schema_version this build cannot read.
var ErrUnsupportedSchema = errors.New("unsupported results schema version")

// Load reads a results file. It refuses a file without a schema_version or
// with one this build does not know (a newer flashcore wrote it). Errors
// name the file, and the line for malformed JSON.
func Load(path string) (*Run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := checkSchemaVersion(data); err != nil {
		return nil, describeDecodeError(path, data, err)
	}
	var run Run
	if err := json.Unmarshal(data, &run); err != nil {
		return nil, describeDecodeError(path, data, err)
	}
	if err := checkSamples(&run); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	fillOps(&run)
	return &run, nil
}

// fillOps gives every case of a file written before ops (schema 4 and
// earlier) its op and params: every case then was attention.
func fillOps(run *Run) {
	for i := range run.Cases {
		if c := &run.Cases[i]; c.Op == "" {
			c.Op = attention.Name
			c.Params = attention.ParamsOf(c.Shape)
		}
	}
}

// checkSamples refuses raw samples that disagree with the stats beside
// them (a hand-edited file, say), naming the row and the key: a compare
// that tested one and printed the other would be wrong without a trace.
func checkSamples(run *Run) error {
	for i := range run.Results {
		r := &run.Results[i]
		for j, t := range r.Timings {
			if t.Samples == nil {
				continue
			}
			where := fmt.Sprintf("results[%d] (case %s, row %s) timings[%d] (L2 %s)", i, r.CaseID, r.Label, j, t.L2)
			if err := t.Samples.check(t); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
		}
	}
	return nil
}

func (s *Samples) check(t Timing) error {
	cross := 0
	if t.CrossCheck != nil {
		cross = t.CrossCheck.N
	}
	for _, list := range []struct {
		key     string
		samples []int64
		n       int
	}{{"kernel_ns", s.KernelNs, t.Kernel.N}, {"call_ns", s.CallNs, t.Call.N}, {"cross_check_ns", s.CrossCheckNs, cross}} {
		if len(list.samples) != list.n {
			return fmt.Errorf("samples.%s holds %d samples, but its stats say n = %d", list.key, len(list.samples), list.n)
		}
		for k, ns := range list.samples {
			if ns < 0 {
				return fmt.Errorf("samples.%s[%d] is %d: a time cannot be negative", list.key, k, ns)
			}
		}
	}
	return checkBlocks(s.KernelBlocks, len(s.KernelNs))
}

// checkBlocks refuses placement blocks that do not split the kernel
// samples: every block holds a sample, and they hold all of them.
func checkBlocks(blocks []int, n int) error {
	if len(blocks) == 0 {
		return nil
	}
	sum := 0
	for k, b := range blocks {
		if b < 1 {
			return fmt.Errorf("samples.kernel_blocks[%d] is %d: every placement's block holds a sample", k, b)
		}
		sum += b
	}
	if sum != n {
		return fmt.Errorf("samples.kernel_blocks add up to %d samples, but samples.kernel_ns holds %d", sum, n)
	}
	return nil
}

func checkSchemaVersion(data []byte) error {
	var head struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return err
	}
	switch v := head.SchemaVersion; {
	case v == nil:
		return errors.New("not a flashcore results file: no schema_version")
	case *v > SchemaVersion:
		return fmt.Errorf("%w %d: this flashcore reads version %d and older; a newer flashcore wrote the file, use it or upgrade",
			ErrUnsupportedSchema, *v, SchemaVersion)
	case *v < 1:
		return fmt.Errorf("%w %d: versions start at 1", ErrUnsupportedSchema, *v)
	}
	return nil
}

// describeDecodeError prefixes err with the file and, when the JSON decoder
// knows where it stopped, the line.
func describeDecodeError(path string, data []byte, err error) error {
	var syntax *json.SyntaxError
	var wrongType *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("%s:%d: %w", path, lineAt(data, syntax.Offset), err)
	case errors.As(err, &wrongType):
		return fmt.Errorf("%s:%d: %w", path, lineAt(data, wrongType.Offset), err)
	}
	return fmt.Errorf("%s: %w", path, err)
}

func lineAt(data []byte, offset int64) int {
	offset = min(max(offset, 0), int64(len(data)))
	return 1 + bytes.Count(data[:offset], []byte("\n"))
}
