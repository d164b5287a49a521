// Package fullref is the harness's own fp32 attention, a reference for
// every row of a case whose fp64 check samples its rows: launched by the
// host itself, never by a plugin, on the GPU where the host has one, and
// calibrated against the fp64 reference before it is trusted
// (docs/correctness.md, "Every row, by the harness's fp32 reference").
//
// The attention is PyTorch's fp32 matrix products, TF32 off, run by a
// script this package embeds (fp32_attention.py) in a process of its own
// with the run's Python. The mask reaches it as each query row's first and
// last visible key, from ops/mask, its one definition.
package fullref

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/flashcore/bench/core/inputs"
	"github.com/flashcore/bench/internal/environ"
)

//go:embed fp32_attention.py
var script []byte

// Where a reference runs.
const (
	GPU = "cuda"
	CPU = "cpu"
)

// callTimeout bounds one reference computation; startTimeout the start
// (importing torch, creating the CUDA context).
const (
	callTimeout  = 10 * time.Minute
	startTimeout = 2 * time.Minute
)

// Worker is the reference's running process.
type Worker struct {
	// Device is what torch runs it on ("NVIDIA H100 80GB HBM3", "cpu"),
	// and Torch its version.
	Device, Torch string

	cmd     *exec.Cmd
	in      io.WriteCloser
	answers chan answer
	dir     string
	stderr  *limitedWriter
	dead    error
}

type answer struct {
	Ready  *bool  `json:"ready"`
	Device string `json:"device"`
	Torch  string `json:"torch"`
	Ns     int64  `json:"ns"`
	Skip   string `json:"skip"`
	Error  string `json:"error"`
	err    error
}

// pythonEnv is the reference process's environment: env, where Python
// writes no bytecode beside the sources. Where env already forbids that
// (PYTHONDONTWRITEBYTECODE, as container images often set), the bytecode
// of what it imports goes to cache (environ.PythonBytecodeCache), so that
// a later run does not compile torch's Python again (seconds of its start
// on an H100 machine); elsewhere Python reads the bytecode installed beside
// the sources and writes none there.
func pythonEnv(env []string, cache string) []string {
	if keep := environ.PythonBytecodeCache(env, cache); keep != nil {
		return append(env, keep...)
	}
	return append(env, "PYTHONDONTWRITEBYTECODE=1")
}

// cacheDir is where the reference process keeps its bytecode:
// <user cache dir>/flashcore/fullref; "" where there is no cache directory.
func cacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "flashcore", "fullref")
}

// Start runs the reference with python on device (GPU or CPU). Its files
// go in a private directory of its own, which no plugin is let read.
func Start(python, device string) (*Worker, error) {
	dir, err := os.MkdirTemp("", "flashcore-fullref-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "fp32_attention.py")
	if err := os.WriteFile(path, script, 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	w := &Worker{dir: dir, answers: make(chan answer, 1), stderr: &limitedWriter{left: 16 << 10}}
	w.cmd = exec.Command(python, "-u", path, device)
	w.cmd.Stderr = w.stderr
	w.cmd.Env = pythonEnv(os.Environ(), cacheDir())
	if w.in, err = w.cmd.StdinPipe(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := w.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s: %w", python, err)
	}
	go w.read(stdout)
	a, err := w.await(startTimeout)
	switch {
	case err != nil:
		w.Close()
		return nil, err
	case a.Ready == nil || !*a.Ready:
		w.Close()
		return nil, fmt.Errorf("the fp32 reference could not start: %s", a.Error)
	}
	w.Device, w.Torch = a.Device, a.Torch
	return w, nil
}

func (w *Worker) read(stdout io.Reader) {
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		var a answer
		if err := json.Unmarshal(lines.Bytes(), &a); err != nil {
			a.err = fmt.Errorf("the fp32 reference answered %q", lines.Text())
		}
		w.answers <- a
	}
	select {
	case w.answers <- answer{err: fmt.Errorf("the fp32 reference exited: %s", strings.TrimSpace(w.stderr.tail(2048)))}:
	default:
	}
}

func (w *Worker) await(timeout time.Duration) (answer, error) {
	select {
	case a := <-w.answers:
		return a, a.err
	case <-time.After(timeout):
		return answer{}, fmt.Errorf("the fp32 reference gave no answer in %s", timeout)
	}
}

// Output is the reference of every row of a case.
type Output struct {
	// O is [B, H, Sq, D] in fp32; nil when Skip says why there is none.
	O    []float32
	Skip string
}

// Attention computes the fp32 reference of every row of t. A failure
// stops the worker: every later call returns the same error.
func (w *Worker) Attention(t *inputs.Tensors) (Output, error) {
	if w.dead != nil {
		return Output{}, w.dead
	}
	out, err := w.attention(t)
	if err != nil {
		w.dead = err
		w.Close()
	}
	return out, err
}

func (w *Worker) attention(t *inputs.Tensors) (Output, error) {
	s := t.Shape
	m := t.Masking()
	lo := make([]byte, 4*s.SeqQ)
	hi := make([]byte, 4*s.SeqQ)
	for i := range s.SeqQ {
		first, last := m.Keys(i, s.SeqQ, s.SeqK)
		binary.LittleEndian.PutUint32(lo[4*i:], uint32(int32(first)))
		binary.LittleEndian.PutUint32(hi[4*i:], uint32(int32(last)))
	}
	files := map[string][]byte{"q": t.Q, "k": t.K, "v": t.V, "lo": lo, "hi": hi}
	req := map[string]any{"dtype": string(s.DType), "batch": s.Batch, "heads": s.Heads, "kv_heads": s.KVHeads,
		"seq_q": s.SeqQ, "seq_k": s.SeqK, "head_dim": s.HeadDim, "scale": s.Scale(), "softcap": m.Softcap,
		"out": filepath.Join(w.dir, "o.bin")}
	defer func() {
		for name := range files {
			_ = os.Remove(filepath.Join(w.dir, name+".bin"))
		}
		_ = os.Remove(filepath.Join(w.dir, "o.bin"))
	}()
	for name, data := range files {
		path := filepath.Join(w.dir, name+".bin")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return Output{}, err
		}
		req[name] = path
	}
	line, _ := json.Marshal(req)
	if _, err := w.in.Write(append(line, '\n')); err != nil {
		return Output{}, fmt.Errorf("the fp32 reference: %w", err)
	}
	a, err := w.await(callTimeout)
	switch {
	case err != nil:
		return Output{}, err
	case a.Error != "":
		return Output{}, errors.New("the fp32 reference failed: " + a.Error)
	case a.Skip != "":
		return Output{Skip: a.Skip}, nil
	}
	raw, err := os.ReadFile(req["out"].(string))
	if err != nil {
		return Output{}, fmt.Errorf("the fp32 reference wrote no output: %w", err)
	}
	if want := 4 * s.QElements(); len(raw) != want {
		return Output{}, fmt.Errorf("the fp32 reference wrote %d bytes, want %d", len(raw), want)
	}
	o := make([]float32, s.QElements())
	for i := range o {
		o[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return Output{O: o}, nil
}

// Close stops the worker and removes its files.
func (w *Worker) Close() {
	if w.in != nil {
		_ = w.in.Close()
	}
	if w.cmd != nil && w.cmd.Process != nil {
		done := make(chan struct{})
		go func() { _ = w.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = w.cmd.Process.Kill()
			<-done
		}
	}
	_ = os.RemoveAll(w.dir)
}

// limitedWriter keeps the first left bytes written to it.
type limitedWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	left int
}

// tail is the last n bytes kept.
func (l *limitedWriter) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	text := l.buf.String()
	if len(text) > n {
		text = "…" + text[len(text)-n:]
	}
	return text
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := min(len(p), l.left); n > 0 {
		l.buf.Write(p[:n])
		l.left -= n
	}
	return len(p), nil
}
