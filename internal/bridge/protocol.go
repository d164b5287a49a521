package bridge

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// maxFrameBytes bounds one frame's body, as the worker's MAX_FRAME_BYTES does.
const maxFrameBytes = 64 << 20

// protocolVersion must equal the worker's PROTOCOL_VERSION
// (flashcore_protocol.py). It versions this bridge's frames, not the
// host–plugin protocol (sdk.ProtocolVersion), though both went to 2 with
// ops: a prepare frame may name an op other than attention, with named
// input and output files, which a version 1 worker would read as
// attention; and the bridge checks capabilities, which a version 1 worker
// did itself.
const protocolVersion = 2

// request is one host→worker frame.
type request struct {
	ID     uint64 `json:"id"`
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// reply is one worker→host frame: the hello first, then one answer per
// request, holding either Result or Error.
type reply struct {
	ID     uint64          `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *workerError    `json:"error,omitempty"`
	Hello  *hello          `json:"hello,omitempty"`
}

// hello is the worker's first frame.
type hello struct {
	Protocol int    `json:"protocol"`
	Python   string `json:"python"`
	PID      int    `json:"pid"`
	// Unavailable says why the backend cannot run here (no torch, no
	// triton); the worker exits after sending it.
	Unavailable string `json:"unavailable,omitempty"`
}

// workerError is an exception the worker caught while answering.
type workerError struct {
	Kind    string `json:"kind"` // "oom" or "error"
	Message string `json:"message"`
}

// writeFrame writes v as one frame: its JSON length, big-endian, then the JSON.
func writeFrame(w io.Writer, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(body) > maxFrameBytes {
		return fmt.Errorf("frame of %d bytes exceeds %d", len(body), maxFrameBytes)
	}
	frame := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(frame, uint32(len(body)))
	copy(frame[4:], body)
	_, err = w.Write(frame)
	return err
}

// readFrame reads one frame into v. A stream that ends before a frame
// starts gives io.EOF; one that ends inside a frame, io.ErrUnexpectedEOF.
func readFrame(r io.Reader, v any) error {
	var header [4]byte
	if _, err := io.ReadFull(r, header[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(header[:])
	if n > maxFrameBytes {
		return fmt.Errorf("frame of %d bytes exceeds %d", n, maxFrameBytes)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	return json.Unmarshal(body, v)
}
