package cudakit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/flashcore/bench/sdk"
)

// inputs are the bytes of a case's inputs as the backend loaded them.
type inputs struct {
	data   [][]byte // in the order of the case's inputs
	sha256 string   // hex SHA-256 of every input concatenated in that order
}

// bytes is the size of every input together.
func (in inputs) bytes() int64 {
	var n int64
	for _, d := range in.data {
		n += int64(len(d))
	}
	return n
}

// readInputs reads an attention case's input files, each of which must
// hold exactly the bytes the shape implies, and hashes what it read: Q, K
// and V concatenated.
func readInputs(files sdk.Tensors, shape sdk.Shape) (inputs, error) {
	ts, _ := attentionTensors(files, shape)
	return readTensors(ts)
}

// readTensors reads the input files, each of which must hold exactly its
// tensor's bytes, and hashes what it read, in order: the input hash of the
// contract.
func readTensors(ts []tensor) (inputs, error) {
	var in inputs
	h := sha256.New()
	for _, t := range ts {
		data, err := readTensor(t)
		if err != nil {
			return inputs{}, err
		}
		in.data = append(in.data, data)
		h.Write(data)
	}
	in.sha256 = hex.EncodeToString(h.Sum(nil))
	return in, nil
}

func readTensor(t tensor) ([]byte, error) {
	if t.path == "" {
		return nil, fmt.Errorf("no %s input file given", t.label)
	}
	data, err := os.ReadFile(t.path)
	if err != nil {
		return nil, fmt.Errorf("read %s input: %w", t.label, err)
	}
	if int64(len(data)) != t.bytes {
		return nil, fmt.Errorf("%s input %s has %d bytes, want %d for %s", t.label, t.path, len(data), t.bytes, t.shape)
	}
	return data, nil
}

// writeOutput writes the output tensor where the host asked for it.
//
//lint:ignore U1000 used by the cuda build
func writeOutput(path string, data []byte) error {
	if path == "" {
		return fmt.Errorf("no output file given")
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// timedOutputPaths are the files a Run writes the outputs of its last
// timed call to, in the order of the case's outputs (named outputs): the
// paths of RunRequest.Outputs, which must name every output in order, or,
// where the host names only RunRequest.Output, that path for the first
// output. None when the host asks for neither.
func timedOutputPaths(req sdk.RunRequest, outputs []string) ([]string, error) {
	if len(req.Outputs) == 0 {
		if req.Output == "" {
			return nil, nil
		}
		return []string{req.Output}, nil
	}
	if len(req.Outputs) != len(outputs) {
		return nil, fmt.Errorf("%d timed output files for the case's %d outputs", len(req.Outputs), len(outputs))
	}
	paths := make([]string, len(req.Outputs))
	for i, f := range req.Outputs {
		if f.Name != outputs[i] {
			return nil, fmt.Errorf("timed output file %d is for %q; the case's output %d is %q", i+1, f.Name, i+1, outputs[i])
		}
		paths[i] = f.Path
	}
	return paths, nil
}
