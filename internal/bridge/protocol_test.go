package bridge

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	var stream bytes.Buffer
	sent := []request{{ID: 1, Method: "describe"}, {ID: 2, Method: "run", Params: map[string]any{"case_id": "é"}}}
	for _, r := range sent {
		if err := writeFrame(&stream, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range sent {
		var got struct {
			ID     uint64         `json:"id"`
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		}
		if err := readFrame(&stream, &got); err != nil {
			t.Fatal(err)
		}
		if got.ID != want.ID || got.Method != want.Method {
			t.Errorf("read %+v, want %+v", got, want)
		}
	}
	if err := readFrame(&stream, &struct{}{}); !errors.Is(err, io.EOF) {
		t.Errorf("after the last frame: %v, want io.EOF", err)
	}
}

// The worker's read_frame expects exactly this layout.
func TestFrameIsBigEndianLengthThenJSON(t *testing.T) {
	var stream bytes.Buffer
	if err := writeFrame(&stream, map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if want := "\x00\x00\x00\x07{\"a\":1}"; stream.String() != want {
		t.Errorf("frame = %q, want %q", stream.String(), want)
	}
}

func TestBrokenFrames(t *testing.T) {
	huge := make([]byte, 4)
	binary.BigEndian.PutUint32(huge, maxFrameBytes+1)
	tests := []struct {
		name string
		data string
		want string
	}{
		{"inside the header", "\x00\x00", "unexpected EOF"},
		{"inside the body", "\x00\x00\x00\x09{}", "unexpected EOF"},
		{"too large", string(huge), "exceeds"},
		{"not JSON", "\x00\x00\x00\x03abc", "invalid character"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := readFrame(strings.NewReader(tc.data), &struct{}{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("readFrame = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
