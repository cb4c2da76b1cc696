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
import re
import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MAX_NESTING",
    "CommandTarget",
    "Connection",
    "HttpExchange",
    "Received",
    "TooDeep",
    "decode_bytes",
    "encode_bytes",
    "loads",
]

#: Seconds an SSE answer gets to end once the responses it was read for came.
STREAM_GRACE = 1.0

#: Extra HTTP headers for each payload of a send (None: none).
Headers = Sequence[dict[str, str] | None]

#: Nesting depth past which the fuzzer reads no JSON text (RFC 8259 section 9: "An implementation
#: may set limits on the maximum depth of nesting"), well below any Python recursion limit, so that
#: whether a text decodes is the same in a campaign (where hypothesis raises the recursion limit)
#: and in its replay.
MAX_NESTING = 400
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(rb"[\[\]{}]")


class TooDeep(RecursionError):
    """A JSON text nested deeper than :data:`MAX_NESTING` (a RecursionError, as the decoder's own
    would be, so every reader treats both alike)."""


_SENT = [0]


def messages_sent() -> int:
    """Messages (stdio lines, HTTP requests, fuzzing-server answers) sent to targets so far in
    this process; a campaign counts the difference."""
    return _SENT[0]


def log_event(events: list[dict[str, Any]], t: float, direction: str, data: bytes, **extra: Any) -> None:
    """Append one transcript event (the bytes, cut at 64 KiB, with their size when cut)."""
    if direction == "send":
        _SENT[0] += 1
    events.append(
        {
            "t": t,
            "dir": direction,
            **encode_bytes(data[:65536]),
            **({"size": len(data)} if len(data) > 65536 else {}),
            **extra,
        }
    )


def nesting(data: bytes) -> int:
    """The deepest nesting of arrays and objects in a JSON text (strings skipped)."""
    if data.count(b"[") + data.count(b"{") <= MAX_NESTING:
        return 0  # cannot be deeper than the limit: not worth a scan
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub(b"", data)):
        depth += 1 if bracket in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest


def loads(data: bytes | str, **kwargs: Any) -> Any:
    """``json.loads`` with the same outcome wherever it runs: a text nested deeper than
    :data:`MAX_NESTING` raises :class:`TooDeep` whatever the recursion limit."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if nesting(raw) > MAX_NESTING:
        raise TooDeep(f"JSON nested deeper than {MAX_NESTING}")
    return json.loads(data, **kwargs)


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
    #: An SSE answer that had not ended :data:`STREAM_GRACE` seconds after the last response
    #: it was read for ("After the JSON-RPC response has been sent, the server SHOULD terminate
    #: the SSE stream").
    stream_open: bool = False
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
        log_event(self.events, self.now(), direction, data, **extra)

    def _got(self, data: bytes, http: int | None = None) -> None:
        rec = Received(self.now(), data, http=http)
        too_deep = False
        try:
            rec.message = loads(data.decode("utf-8"))
            rec.parsed = True
        except TooDeep:
            too_deep = True  # JSON the fuzzer does not read, not junk
        except (UnicodeDecodeError, ValueError, RecursionError):
            pass
        if not too_deep and (not _is_jsonrpc(rec.message) or not rec.parsed):
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
        headers: Headers | None = None,
        startup: float = 0.0,
    ) -> None:
        """Send ``payloads`` (with extra HTTP ``headers`` per payload) and wait, up to
        ``timeout`` in all, until every id in ``want`` is answered.  A peer that has said nothing
        yet gets up to ``startup`` seconds for its first message (time to start is not time to
        answer); ``timeout`` then counts from that message."""
        self._send(payloads, want, time.monotonic() + timeout, headers or [], startup)

    def _send(
        self, payloads: Sequence[bytes], want: set[Any], deadline: float, headers: Headers, startup: float
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
