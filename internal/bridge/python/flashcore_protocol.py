"""The worker's side of the bridge protocol: frames on two pipes, and the
few sdk types the worker writes by hand.

A frame is a 4-byte big-endian length and a UTF-8 JSON body
(internal/bridge/protocol.go reads and writes the same layout). Standard
library only, so the framing is testable without torch.
"""

import json
import struct

# PROTOCOL_VERSION mirrors internal/bridge's protocolVersion (not
# sdk.ProtocolVersion, the host–plugin protocol): the bridge refuses a
# worker whose hello names another. Version 2: prepare may name an op
# other than attention, with named input and output files, and the worker
# no longer checks capabilities (the bridge does, in Go).
PROTOCOL_VERSION = 2
_HEADER = struct.Struct(">I")
MAX_FRAME_BYTES = 64 << 20


class ProtocolError(Exception):
    """The byte stream is not a sequence of frames."""


def write_frame(stream, message):
    """Writes message as one frame: length, then compact JSON."""
    body = json.dumps(message, separators=(",", ":"), allow_nan=False).encode()
    if len(body) > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds {MAX_FRAME_BYTES}")
    stream.write(_HEADER.pack(len(body)) + body)
    stream.flush()


def read_frame(stream):
    """Reads one frame. Returns None at a clean end of stream."""
    header = _read_exactly(stream, _HEADER.size)
    if header is None:
        return None
    (length,) = _HEADER.unpack(header)
    if length > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {length} bytes exceeds {MAX_FRAME_BYTES}")
    body = _read_exactly(stream, length)
    if body is None:
        raise ProtocolError(f"stream ended inside a frame of {length} bytes")
    return json.loads(body)


def _read_exactly(stream, n):
    chunks, got = [], 0
    while got < n:
        chunk = stream.read(n - got)
        if not chunk:
            if got == 0:
                return None
            raise ProtocolError(f"stream ended after {got} of {n} bytes")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def diagnostic(severity, summary, detail=""):
    """sdk.Diagnostic as JSON."""
    out = {"severity": severity, "summary": summary}
    if detail:
        out["detail"] = detail
    return out
