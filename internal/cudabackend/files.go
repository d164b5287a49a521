package cudabackend

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/flashcore/bench/sdk"
)

// inputs are the bytes of Q, K and V as the backend loaded them.
type inputs struct {
	q, k, v []byte
	sha256  string // hex SHA-256 of q, k and v concatenated
}

// readInputs reads the case's input files, each of which must hold exactly
// the bytes the shape implies, and hashes what it read.
func readInputs(files sdk.Tensors, shape sdk.Shape) (inputs, error) {
	qBytes := int64(shape.QElements()) * int64(shape.DType.Size())
	kvBytes := int64(shape.KVElements()) * int64(shape.DType.Size())
	var in inputs
	var err error
	if in.q, err = readTensor("Q", files.Q, qBytes, shape); err != nil {
		return inputs{}, err
	}
	if in.k, err = readTensor("K", files.K, kvBytes, shape); err != nil {
		return inputs{}, err
	}
	if in.v, err = readTensor("V", files.V, kvBytes, shape); err != nil {
		return inputs{}, err
	}
	h := sha256.New()
	h.Write(in.q)
	h.Write(in.k)
	h.Write(in.v)
	in.sha256 = hex.EncodeToString(h.Sum(nil))
	return in, nil
}

func readTensor(name, path string, want int64, shape sdk.Shape) ([]byte, error) {
	if path == "" {
		return nil, fmt.Errorf("no %s input file given", name)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s input: %w", name, err)
	}
	if int64(len(data)) != want {
		return nil, fmt.Errorf("%s input %s has %d bytes, want %d for %s", name, path, len(data), want, shape)
	}
	return data, nil
}

// writeOutput writes the output tensor where the host asked for it.
func writeOutput(path string, data []byte) error {
	if path == "" {
		return fmt.Errorf("no output file given")
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}
