"""What both raw drivers share: the connection's log and what came back, and bytes in a
transcript.

A :class:`Connection` logs every byte sent and received, with the time since it opened, in
:attr:`Connection.events`; keeps what came back (:class:`Received`, and over HTTP each
:class:`HttpExchange`); and refuses a request from the peer with -32601 at once
(:meth:`Connection._answer_server_requests`), each transport sending the refusal its way.
:class:`CommandTarget` is a peer we launch (a server over stdio, a client under test).
"""

from __future__ import annotations

import base64
import json
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CommandTarget", "Connection", "HttpExchange", "Received", "decode_bytes", "encode_bytes"]


def encode_bytes(data: bytes) -> dict[str, str]:
    """Bytes for a JSON transcript: text when they are UTF-8, else Base64."""
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def decode_bytes(entry: dict[str, str]) -> bytes:
    if "base64" in entry:
        return base64.b64decode(entry["base64"])
    return entry["text"].encode("utf-8", "surrogatepass")


@dataclass
class Received:
    """One message (or line, or body) that came back."""

    t: float
    data: bytes
    message: Any = None  # the parsed JSON, when it parsed
    parsed: bool = False
    http: int | None = None  # index of the HTTP exchange it came in


@dataclass
class HttpExchange:
    """One HTTP request and what came back (status and headers; messages go to ``received``)."""

    method: str
    headers: list[tuple[str, str]]
    body: bytes
    status: int | None = None
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    content_type: str = ""
    body_excerpt: bytes = b""
    error: str | None = None
    event_id: str | None = None  # the SSE event id the stream was dropped at (see request())
    payload: int | None = None  # index of the payload in the case
    expects_response: bool = False
    t: float = 0.0
    index: int = -1  # position in Connection.http


class Connection:
    """A live connection to the target; subclasses move the bytes."""

    kind = "?"

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.events: list[dict[str, Any]] = []
        self.received: list[Received] = []
        self.http: list[HttpExchange] = []
        self.junk: list[bytes] = []  # stdout lines that are not JSON-RPC

    def now(self) -> float:
        return round(time.monotonic() - self.started, 6)

    def log(self, direction: str, data: bytes, **extra: Any) -> None:
        self.events.append(
            {
                "t": self.now(),
                "dir": direction,
                **encode_bytes(data[:65536]),
                **({"size": len(data)} if len(data) > 65536 else {}),
                **extra,
            }
        )

    def _got(self, data: bytes, http: int | None = None) -> None:
        rec = Received(self.now(), data, http=http)
        try:
            rec.message = json.loads(data.decode("utf-8"))
            rec.parsed = True
        except (UnicodeDecodeError, ValueError, RecursionError):
            pass
        if not _is_jsonrpc(rec.message) or not rec.parsed:
            self.junk.append(data)
        self.received.append(rec)
        self.log("recv", data, **({"http": http} if http is not None else {}))

    # interface
    def send(
        self,
        payloads: Sequence[bytes],
        *,
        want: set[Any],
        timeout: float,
        headers: Sequence[dict[str, str] | None] | None = None,
    ) -> None:
        raise NotImplementedError

    def wait(self, want: set[Any], timeout: float) -> None:
        raise NotImplementedError

    def alive(self) -> bool:
        return True

    def exit_code(self) -> int | None:
        return None

    def stderr_tail(self) -> str:
        return ""

    def close(self) -> None:
        pass

    def answered(self) -> set[Any]:
        out = set()
        for rec in self.received:
            for msg in _flatten(rec.message):
                if isinstance(msg, dict) and "method" not in msg and ("result" in msg or "error" in msg):
                    out.add(_key(msg.get("id")))
        return out

    def _answer_server_requests(self) -> None:
        """A request from the server gets -32601 at once, so it never waits on us."""
        rec = self.received[-1]
        for msg in _flatten(rec.message):
            if isinstance(msg, dict) and isinstance(msg.get("method"), str) and "id" in msg:
                reply = json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": msg["id"],
                        "error": {"code": -32601, "message": "the fuzzer answers no requests"},
                    }
                )
                self._send_reply(reply.encode())

    def _send_reply(self, reply: bytes) -> None:
        """Send our answer to a request from the peer, the transport's way."""
        raise NotImplementedError


def _key(value: Any) -> Any:
    """Ids compared as JSON: ``1`` and ``"1"`` differ, ``1`` and ``True`` too."""
    return json.dumps(value, sort_keys=True)


def _flatten(message: Any) -> list[Any]:
    return message if isinstance(message, list) else [message]


def _is_jsonrpc(message: Any) -> bool:
    items = _flatten(message)
    return bool(items) and all(isinstance(m, dict) and m.get("jsonrpc") == "2.0" for m in items)


class CommandTarget:
    """A peer we launch: ``command`` (a string split like a shell would, or an argv list),
    run in ``cwd`` with ``env``."""

    kind = "command"

    def __init__(
        self, command: str | Sequence[str], *, cwd: str | None = None, env: dict[str, str] | None = None
    ) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise ValueError("empty command")
        self.cwd = cwd
        self.env = env

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "command": self.argv, **({"cwd": self.cwd} if self.cwd else {})}
