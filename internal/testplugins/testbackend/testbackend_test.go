package testbackend

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/x448/float16"

	"github.com/flashcore/bench/sdk"
)

var testShape = sdk.Shape{Batch: 1, Heads: 4, KVHeads: 2, SeqQ: 3, SeqK: 5, HeadDim: 8, DType: sdk.FP16}

// writeInputs writes distinct Q, K and V files for shape and returns the
// request that names them.
func writeInputs(t *testing.T, shape sdk.Shape) sdk.PrepareRequest {
	t.Helper()
	dir := t.TempDir()
	size := shape.DType.Size()
	files := sdk.Tensors{
		Q:      filepath.Join(dir, "q.bin"),
		K:      filepath.Join(dir, "k.bin"),
		V:      filepath.Join(dir, "v.bin"),
		Output: filepath.Join(dir, "o.bin"),
	}
	for i, tensor := range []struct {
		path  string
		bytes int
	}{{files.Q, shape.QElements() * size}, {files.K, shape.KVElements() * size}, {files.V, shape.KVElements() * size}} {
		data := bytes.Repeat([]byte{byte(i + 1), byte(i + 2)}, tensor.bytes/2)
		if err := os.WriteFile(tensor.path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return sdk.PrepareRequest{CaseID: "c1", Shape: shape, Files: files}
}

func TestPrepareReportsTheHashOfTheFilesRead(t *testing.T) {
	request := writeInputs(t, testShape)
	request.Variant = "t"
	prepared, err := New(Options{Name: "t"}).Prepare(context.Background(), request)
	if err != nil {
		t.Fatal(err)
	}
	hash := sha256.New()
	for _, path := range []string{request.Files.Q, request.Files.K, request.Files.V} {
		data, _ := os.ReadFile(path)
		hash.Write(data)
	}
	if want := hex.EncodeToString(hash.Sum(nil)); prepared.LoadedSHA256 != want {
		t.Errorf("LoadedSHA256 = %s, want %s", prepared.LoadedSHA256, want)
	}
}

func TestPrepareRejectsAFileOfTheWrongSize(t *testing.T) {
	request := writeInputs(t, testShape)
	request.Variant = "t"
	request.Shape.SeqK++ // K and V are now too short
	_, err := New(Options{Name: "t"}).Prepare(context.Background(), request)
	if err == nil || !strings.Contains(err.Error(), "k.bin") {
		t.Errorf("err = %v, want one naming k.bin", err)
	}
}

func TestFetchWritesWhatFillOutputMakes(t *testing.T) {
	cases := []struct {
		name  string
		dtype sdk.DType
		fill  func([]byte, sdk.Shape, []byte)
		check func(t *testing.T, output, q []byte)
	}{
		{"echo", sdk.FP16, nil, func(t *testing.T, output, q []byte) {
			if !bytes.Equal(output, q) {
				t.Errorf("output is not Q")
			}
		}},
		{"zeros", sdk.BF16, FillZeros, func(t *testing.T, output, _ []byte) {
			if !bytes.Equal(output, make([]byte, len(output))) {
				t.Errorf("output is not all zeros")
			}
		}},
		{"nan fp16", sdk.FP16, FillNaN, func(t *testing.T, output, _ []byte) {
			for i := 0; i < len(output); i += 2 {
				if !float16.Frombits(binary.LittleEndian.Uint16(output[i:])).IsNaN() {
					t.Fatalf("element %d is not NaN", i/2)
				}
			}
		}},
		{"nan bf16", sdk.BF16, FillNaN, func(t *testing.T, output, _ []byte) {
			for i := 0; i < len(output); i += 2 {
				bits := uint32(binary.LittleEndian.Uint16(output[i:])) << 16
				if !math.IsNaN(float64(math.Float32frombits(bits))) {
					t.Fatalf("element %d is not NaN", i/2)
				}
			}
		}},
		{"nan fp32", sdk.FP32, FillNaN, func(t *testing.T, output, _ []byte) {
			for i := 0; i < len(output); i += 4 {
				if !math.IsNaN(float64(math.Float32frombits(binary.LittleEndian.Uint32(output[i:])))) {
					t.Fatalf("element %d is not NaN", i/4)
				}
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shape := testShape
			shape.DType = c.dtype
			request := writeInputs(t, shape)
			request.Variant = "t"
			backend := New(Options{Name: "t", FillOutput: c.fill})
			ctx := context.Background()
			if _, err := backend.Prepare(ctx, request); err != nil {
				t.Fatal(err)
			}
			if _, err := backend.Fetch(ctx, sdk.FetchRequest{CaseID: "c1"}); err != nil {
				t.Fatal(err)
			}
			output, err := os.ReadFile(request.Files.Output)
			if err != nil {
				t.Fatal(err)
			}
			q, _ := os.ReadFile(request.Files.Q)
			if len(output) != len(q) {
				t.Fatalf("output has %d bytes, want %d", len(output), len(q))
			}
			if bytes.Contains(output, bytes.Repeat([]byte{sdk.PoisonByte}, shape.DType.Size())) {
				t.Errorf("output still holds poison")
			}
			c.check(t, output, q)
		})
	}
}

func TestRunFollowsTheMeasurement(t *testing.T) {
	request := writeInputs(t, testShape)
	request.Variant = "t"
	backend := New(Options{Name: "t"})
	ctx := context.Background()
	if _, err := backend.Prepare(ctx, request); err != nil {
		t.Fatal(err)
	}
	measurement := sdk.Measurement{WarmupRuns: 2, MinSamples: 6, MaxSamples: 9, TimeCap: time.Second, CallSamples: 4}
	samples, err := backend.Run(ctx, sdk.RunRequest{CaseID: "c1", Measurement: measurement})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(samples.KernelTimes); n < 6 || n > 9 {
		t.Errorf("%d kernel times, want 6 to 9", n)
	}
	if n := len(samples.CallTimes); n != 4 {
		t.Errorf("%d call times, want 4", n)
	}
	if err := backend.Release(ctx, sdk.ReleaseRequest{CaseID: "c1"}); err != nil {
		t.Fatal(err)
	}
	if err := backend.Release(ctx, sdk.ReleaseRequest{CaseID: "c1"}); err == nil {
		t.Errorf("second Release of the same case succeeded")
	}
}
