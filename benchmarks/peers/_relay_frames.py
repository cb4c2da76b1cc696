"""What the two relay floors of ``bench_proxy`` share: the echo server they start, and the
rewriting of one newline-delimited JSON-RPC frame (the request's id replaced by the relay's own
on the way up, given back on the answer's way down; nothing else is decoded)."""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec

ROOT = Path(__file__).resolve().parent.parent.parent
ECHO = [sys.executable, "-m", "mcp_trio._cli", "serve", str(ROOT / "benchmarks" / "echo_server.py")]


class Frame(msgspec.Struct, omit_defaults=True):
    """A JSON-RPC message with everything but its id and method kept as raw JSON."""

    jsonrpc: str
    id: int | str | None | msgspec.UnsetType = msgspec.UNSET
    method: str | msgspec.UnsetType = msgspec.UNSET
    params: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    result: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    error: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class Ids:
    """The client's ids of the requests in flight upstream, by the relay's own."""

    def __init__(self) -> None:
        self.decode = msgspec.json.Decoder(Frame).decode
        self.encode = msgspec.json.Encoder().encode
        self.by_own: dict[int, int | str | None] = {}
        self.next = 0

    def up(self, line: bytes) -> bytes:
        frame = self.decode(line)
        if frame.method is not msgspec.UNSET and frame.id is not msgspec.UNSET:
            self.next += 1
            self.by_own[self.next] = frame.id
            frame.id = self.next
        return self.encode(frame) + b"\n"

    def down(self, line: bytes) -> bytes:
        frame = self.decode(line)
        if frame.method is msgspec.UNSET and isinstance(frame.id, int) and frame.id in self.by_own:
            frame.id = self.by_own.pop(frame.id)
        return self.encode(frame) + b"\n"


def lines(buffer: bytearray, data: bytes | bytearray) -> list[bytes]:
    """The whole lines ``data`` completes (what is left stays in ``buffer``)."""
    buffer += data
    end = buffer.rfind(b"\n")
    if end < 0:
        return []
    whole = bytes(buffer[:end])
    del buffer[: end + 1]
    return whole.split(b"\n")
