package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/flashcore/bench/op"
	"github.com/flashcore/bench/ops"
	"github.com/flashcore/bench/sdk"
)

// workspace is one row's private directory. The host writes fresh,
// read-only copies of the case's inputs into it from its own memory, names
// the output files in it, and removes it when the row ends. No two rows
// share a file, so a backend that rewrites its inputs or replaces its
// output with something else harms its own row only, and is named for it.
type workspace struct {
	dir string
	// inputs are the input files, outputs the files Fetch writes, and
	// timed the files Run writes the output of its last timed call to,
	// each in the op's order.
	inputs, outputs, timed []sdk.TensorFile
}

// inputHashes are the SHA-256 of each input tensor as the host generated
// it, in the op's order.
type inputHashes [][sha256.Size]byte

func hashTensors(in *op.Inputs) inputHashes {
	out := make(inputHashes, len(in.Tensors))
	for i, t := range in.Tensors {
		out[i] = sha256.Sum256(t.Data)
	}
	return out
}

// newWorkspace makes a row's directory under caseDir with makeDir (the
// plugin's, so that it may write there as its own user) and writes the
// inputs.
// A backend may have removed caseDir, or put a file or a link in its
// place (or its parent's); the host takes the place back first, so the
// next row is not blamed for what an earlier one did.
func newWorkspace(caseDir string, c op.Case, in *op.Inputs, makeDir func(parent, pattern string) (string, error)) (*workspace, error) {
	if err := reclaimDir(caseDir, 2); err != nil {
		return nil, fmt.Errorf("row workspace: %w", err)
	}
	dir, err := makeDir(caseDir, "row-")
	if err != nil {
		return nil, fmt.Errorf("row workspace: %w", err)
	}
	w := &workspace{
		dir:     dir,
		inputs:  ops.InputFiles(in, dir, ""),
		outputs: ops.OutputFiles(c, dir, "out"),
		timed:   ops.OutputFiles(c, dir, "timed-out"),
	}
	if err := writeInputs(w.inputs, in); err != nil {
		w.remove()
		return nil, err
	}
	return w, nil
}

// writeInputs writes the inputs, read-only, at the paths files names,
// replacing whatever is there.
func writeInputs(files []sdk.TensorFile, in *op.Inputs) error {
	for i, f := range files {
		if err := clearPath(f.Path); err != nil {
			return err
		}
		if err := os.WriteFile(f.Path, in.Tensors[i].Data, 0o444); err != nil {
			return fmt.Errorf("write inputs: %w", err)
		}
	}
	return nil
}

// tampered says which input files no longer hold what the host wrote, with
// both hashes in full; "" when all are intact.
func (w *workspace) tampered(want inputHashes) string {
	var changed []string
	for i, f := range w.inputs {
		name := filepath.Base(f.Path)
		got, err := hashFile(f.Path)
		switch {
		case err != nil:
			changed = append(changed, name+": "+unreadable(err))
		case got != want[i]:
			changed = append(changed, fmt.Sprintf("%s: sha256 %s, host wrote %s", name, hex.EncodeToString(got[:]), hex.EncodeToString(want[i][:])))
		}
	}
	if len(changed) == 0 {
		return ""
	}
	return "the backend modified its read-only input files during the row (" + strings.Join(changed, "; ") + ")"
}

// hashFile hashes a regular file without following a symbolic link.
func hashFile(path string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := openRegular(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// openRegular opens path for reading only if it is a regular file: not a
// symbolic link (which could point anywhere), a directory, a FIFO (which
// would block) or a device.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, errors.New("is a symbolic link, not a file")
		}
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("is a %s, not a regular file", describeMode(info.Mode()))
	}
	return f, nil
}

func describeMode(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// readOutput reads an output file of exactly want bytes. Its size is taken
// from the open file before anything is read, and nothing beyond want bytes
// is ever allocated: a backend that writes a huge (or sparse) file, a
// directory, a link or a pipe gets a reason, not the host's memory. The
// reason is "" when data is the output; missing is the reason when there
// is no file at all.
func readOutput(path string, want int64, missing string) (data []byte, reason string) {
	f, err := openRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, missing
	}
	if err != nil {
		return nil, "output file " + filepath.Base(path) + " " + strings.TrimPrefix(err.Error(), "open "+path+": ")
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, "output file: " + err.Error()
	}
	if info.Size() != want {
		return nil, fmt.Sprintf("wrong output size: %d bytes, want %d", info.Size(), want)
	}
	data = make([]byte, want)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, "read output file: " + err.Error()
	}
	return data, ""
}

// remove deletes the workspace, first making writable whatever a backend
// made read-only inside it.
func (w *workspace) remove() {
	_ = filepath.WalkDir(w.dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(path, 0o700)
		}
		return nil
	})
	_ = os.RemoveAll(w.dir)
}

// reclaimDir makes dir a real directory (not a link) again, removing
// whatever stands in its place or in its first levels-1 parents' places.
func reclaimDir(dir string, levels int) error {
	for p, i := dir, 0; i < levels; p, i = filepath.Dir(p), i+1 {
		if fi, err := os.Lstat(p); err == nil && !fi.IsDir() {
			if err := os.RemoveAll(p); err != nil {
				return err
			}
		}
	}
	return os.MkdirAll(dir, 0o755)
}

// unreadable says why an input file could not be hashed, without the
// workspace's path.
func unreadable(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return "removed, or its directory replaced"
	case errors.Is(err, fs.ErrPermission):
		return "made unreadable"
	}
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err.Error()
	}
	return err.Error()
}
