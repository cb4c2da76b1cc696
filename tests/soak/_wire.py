"""Raw HTTP/1.1 for the soak test: trio sockets bound to a chosen loopback source address (the
server tells clients apart by address), h11 to frame requests and read answers, every step
under a timeout.  Shared by the legitimate clients (``_legit``) and the attackers."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import h11
import trio

ACCEPT = "application/json, text/event-stream"
LATEST = "2025-11-25"  # no batches
BATCHES = "2025-03-26"  # the revision with JSON-RPC batches
SERVER = "127.0.0.1"


class Failed(Exception):
    """No well-formed HTTP answer in time, or an answer other than the one expected."""


async def connect(
    source: str, port: int, timeout: float = 5.0, rcvbuf: int | None = None
) -> trio.SocketStream:
    """A TCP connection to the server from ``source`` (bound before connecting)."""
    sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
    try:
        if rcvbuf is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        await sock.bind((source, 0))
        with trio.move_on_after(timeout) as scope:
            await sock.connect((SERVER, port))
        if scope.cancelled_caught:
            raise Failed(f"connect from {source} took over {timeout} s")
    except BaseException:
        sock.close()
        raise
    return trio.SocketStream(sock)


def close(stream: trio.SocketStream | None) -> None:
    """Close at once (also under cancellation)."""
    if stream is not None:
        stream.socket.close()


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes = b""

    def messages(self) -> list[Any]:
        """The JSON-RPC messages of a JSON or SSE body (a batch reply flattened)."""
        if self.headers.get("content-type", "").startswith("text/event-stream"):
            found: list[Any] = []
            for event in self.body.replace(b"\r\n", b"\n").split(b"\n\n"):
                data = b"\n".join(
                    line[5:].lstrip(b" ") for line in event.split(b"\n") if line.startswith(b"data:")
                )
                if data.strip():
                    value = json.loads(data)
                    found.extend(value if isinstance(value, list) else [value])
            return found
        if not self.body:
            return []
        value = json.loads(self.body)
        return value if isinstance(value, list) else [value]


@dataclass
class Client:
    """One keep-alive HTTP/1.1 connection."""

    stream: trio.SocketStream
    port: int
    conn: h11.Connection = field(
        default_factory=lambda: h11.Connection(h11.CLIENT, max_incomplete_event_size=1 << 20)
    )
    usable: bool = True

    @classmethod
    async def open(cls, source: str, port: int, timeout: float = 5.0) -> Client:
        return cls(await connect(source, port, timeout), port)

    def close(self) -> None:
        self.usable = False
        close(self.stream)

    def _head(self, method: str, headers: dict[str, str], length: int | None) -> bytes:
        pairs = [("host", f"{SERVER}:{self.port}"), *headers.items()]
        if length is not None:
            pairs.append(("content-length", str(length)))
        return self.conn.send(h11.Request(method=method, target="/mcp", headers=pairs)) or b""

    async def start(
        self, method: str, headers: dict[str, str], body: bytes = b"", timeout: float = 5.0
    ) -> Reply:
        """Send one request; its answer's head (the body is left to ``finish`` or ``drain``)."""
        if not self.usable:
            raise Failed("connection no longer usable")
        with self._failing(method, timeout):
            await self.send(method, headers, body)
            return await self.read_head()
        raise AssertionError("unreachable")

    async def send(self, method: str, headers: dict[str, str], body: bytes = b"") -> None:
        """Send one whole request (no timeout: for callers that bound it themselves)."""
        head = self._head(method, headers, len(body) if method != "GET" else None)
        await self.stream.send_all(
            head + (self.conn.send(h11.Data(data=body)) if body else b"") + self.conn.send(h11.EndOfMessage())
        )

    async def finish(self, reply: Reply, timeout: float = 5.0, max_body: int = 64 << 20) -> Reply:
        """Read the body of ``reply`` within ``timeout`` seconds."""
        with self._failing("reading an answer", timeout):
            chunks: list[bytes] = []
            size = 0
            while not isinstance(event := await self._next(), h11.EndOfMessage):
                if isinstance(event, h11.Data):
                    size += len(event.data)
                    if size > max_body:
                        raise Failed(f"answer over {max_body} bytes")
                    chunks.append(bytes(event.data))
            reply.body = b"".join(chunks)
        if self.conn.our_state is h11.DONE and self.conn.their_state is h11.DONE:
            self.conn.start_next_cycle()
        else:
            self.close()
        return reply

    async def drain(self) -> None:
        """Read and drop an answer's body until it ends or the connection closes (no timeout)."""
        try:
            while not isinstance(await self._next(), h11.EndOfMessage):
                pass
        except (
            Failed,
            OSError,
            trio.BrokenResourceError,
            trio.ClosedResourceError,
            h11.ProtocolError,
        ):
            pass
        self.close()

    async def request(
        self,
        method: str,
        headers: dict[str, str],
        body: bytes = b"",
        timeout: float = 5.0,
        max_body: int = 64 << 20,
    ) -> Reply:
        """Send one request and read its whole answer within ``timeout`` seconds."""
        deadline = trio.current_time() + timeout
        reply = await self.start(method, headers, body, timeout)
        return await self.finish(reply, max(0.0, deadline - trio.current_time()), max_body)

    @contextmanager
    def _failing(self, what: str, timeout: float) -> Iterator[None]:
        """Bound a step by ``timeout``; every way it can fail becomes ``Failed`` (and closes)."""
        try:
            with trio.fail_after(timeout):
                yield
        except trio.TooSlowError:
            self.close()
            raise Failed(f"{what}: no whole answer within {timeout:.1f} s") from None
        except Failed:
            self.close()
            raise
        except (
            OSError,
            trio.BrokenResourceError,
            trio.ClosedResourceError,
            h11.ProtocolError,
        ) as exc:
            self.close()
            raise Failed(f"{what}: {type(exc).__name__}: {exc}") from None

    async def read_head(self) -> Reply:
        """The next final response's head (interim 1xx answers skipped)."""
        while True:
            event = await self._next()
            if isinstance(event, h11.Response):
                found = {k.decode().lower(): v.decode() for k, v in event.headers}
                return Reply(event.status_code, found)

    async def _next(self) -> Any:
        while True:
            event = self.conn.next_event()
            if event is h11.NEED_DATA:
                data = await self.stream.receive_some(65536)
                self.conn.receive_data(data)  # b"" is the end of input
                continue
            if isinstance(event, h11.ConnectionClosed):
                raise Failed("connection closed by the server")
            return event


def rpc(ident: int | str | None, method: str, params: Any = None) -> dict[str, Any]:
    """A JSON-RPC request, or a notification when ``ident`` is None."""
    message = {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}
    return {key: value for key, value in message.items() if value is not None}


def call(ident: int | str, tool: str, **arguments: Any) -> dict[str, Any]:
    return rpc(ident, "tools/call", {"name": tool, "arguments": arguments})


def encode(message: Any) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode()


def initialize(version: str = LATEST, name: str = "soak") -> bytes:
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": name, "version": "1"},
    }
    return encode(rpc(0, "initialize", params))


def headers(session: str | None = None, version: str | None = None) -> dict[str, str]:
    found = {"content-type": "application/json", "accept": ACCEPT}
    if session is not None:
        found["mcp-session-id"] = session
    if version is not None and version != BATCHES:  # 2025-03-26 had no version header
        found["mcp-protocol-version"] = version
    return found


async def open_session(client: Client, version: str = LATEST, timeout: float = 5.0) -> str:
    """``initialize`` then ``notifications/initialized``; the session id."""
    reply = await client.request("POST", headers(), initialize(version), timeout)
    session = reply.headers.get("mcp-session-id")
    if reply.status != 200 or session is None:
        raise Failed(f"initialize answered {reply.status}: {reply.body[:120]!r}")
    notified = await client.request(
        "POST", headers(session, version), encode(rpc(None, "notifications/initialized")), timeout
    )
    if notified.status != 202:
        raise Failed(f"notifications/initialized answered {notified.status}")
    return session


async def new_session(source: str, port: int, version: str = LATEST, tries: int = 5) -> str:
    """A session opened from ``source`` on a connection of its own (closed after), retried: an
    attack must not give up because the server was busy when it began."""
    why = ""
    for _ in range(tries):
        client: Client | None = None
        try:
            client = await Client.open(source, port, timeout=3.0)
            return await open_session(client, version)
        except (Failed, OSError) as exc:
            why = str(exc)
            await trio.sleep(1.0)
        finally:
            if client is not None:
                client.close()
    raise Failed(f"no session in {tries} tries: {why}")


class Pacer:
    """At most ``rate`` events per second, spread evenly."""

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate
        self.next = trio.current_time()

    async def wait(self) -> None:
        now = trio.current_time()
        self.next = max(self.next, now) + self.interval
        await trio.sleep_until(self.next - self.interval)
