import io
import json
import struct

import pytest

import flashcore_worker as core


class Trickle(io.RawIOBase):
    """A pipe that hands out one byte per read, as a slow pipe may."""

    def __init__(self, data):
        self.data = memoryview(data)

    def readable(self):
        return True

    def read(self, n=-1):
        chunk, self.data = bytes(self.data[:1]), self.data[1:]
        return chunk


def test_round_trip_keeps_messages_and_order():
    messages = [{"id": 1, "method": "describe"}, {"id": 2, "params": {"case_id": "é", "x": [1, 2.5]}}, {}]
    stream = io.BytesIO()
    for m in messages:
        core.write_frame(stream, m)
    stream.seek(0)
    assert [core.read_frame(stream) for _ in messages] == messages
    assert core.read_frame(stream) is None


def test_frame_is_big_endian_length_then_json():
    stream = io.BytesIO()
    core.write_frame(stream, {"a": 1})
    assert stream.getvalue() == b"\x00\x00\x00\x07" + b'{"a":1}'


def test_reads_across_short_reads():
    body = json.dumps({"id": 9, "result": {"kernel_times": list(range(300))}}).encode()
    assert core.read_frame(Trickle(struct.pack(">I", len(body)) + body))["id"] == 9


@pytest.mark.parametrize("data, message", [
    (b"\x00\x00", "after 2 of 4 bytes"),
    (b"\x00\x00\x00\x09{}", "after 2 of 9 bytes"),
    (struct.pack(">I", core.MAX_FRAME_BYTES + 1), "exceeds"),
])
def test_broken_streams_raise(data, message):
    with pytest.raises(core.ProtocolError, match=message):
        core.read_frame(io.BytesIO(data))


def test_nan_is_refused_not_sent():
    with pytest.raises(ValueError):
        core.write_frame(io.BytesIO(), {"sm_clock_mhz": float("nan")})
