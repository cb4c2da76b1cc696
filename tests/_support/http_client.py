"""A scripted Streamable HTTP server for the client's tests (raw h11 on a socket: ``Server``,
``Conn``, ``Handler``), TLS certificates made for 127.0.0.1, and JSON-RPC frames."""

from __future__ import annotations

import datetime
import ipaddress
import json
import socket
import ssl
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import h11
import pytest
import trio

from mcp_trio.transports import Frame
from mcp_trio.transports.http._sse import encode_event
from mcp_trio.transports.http.client import (
    HTTPClientChannel,
)

INFO = {"name": "http-client-test", "version": "1"}


VERSION = "2025-11-25"


class Request:
    def __init__(self, method: str, target: str, headers: dict[str, str], body: bytes) -> None:
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    @property
    def rpc_method(self) -> str | None:
        body = self.json
        return body.get("method") if isinstance(body, dict) else None

    @property
    def rpc_id(self) -> Any:
        body = self.json
        return body.get("id") if isinstance(body, dict) else None


class Conn:
    """The server side of one HTTP connection."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.h11 = h11.Connection(h11.SERVER)
        self.closed = False

    async def _send(self, event: Any) -> None:
        data = self.h11.send(event)
        if data:
            await self.stream.send_all(data)

    async def next_request(self) -> Request | None:
        head: Any = None
        body = bytearray()
        while True:
            event = self.h11.next_event()
            if event is h11.NEED_DATA:
                data = await self.stream.receive_some(65536)
                self.h11.receive_data(data)
                continue
            if isinstance(event, h11.ConnectionClosed):
                return None
            if isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                headers = {k.decode(): v.decode() for k, v in head.headers}
                return Request(head.method.decode(), head.target.decode(), headers, bytes(body))

    async def respond(
        self,
        status: int,
        body: bytes = b"",
        headers: list[tuple[str, str]] | None = None,
        ctype: str | None = None,
    ) -> None:
        hs = list(headers or [])
        if ctype is not None:
            hs.append(("Content-Type", ctype))
        hs.append(("Content-Length", str(len(body))))
        await self._send(h11.Response(status_code=status, headers=hs))
        if body:
            await self._send(h11.Data(data=body))
        await self._send(h11.EndOfMessage())

    async def json(self, status: int, obj: Any, headers: list[tuple[str, str]] | None = None) -> None:
        await self.respond(status, json.dumps(obj).encode(), headers, "application/json")

    async def start_sse(self, headers: list[tuple[str, str]] | None = None) -> None:
        hs = [("Content-Type", "text/event-stream"), *(headers or [])]
        await self._send(h11.Response(status_code=200, headers=hs))

    async def event(self, obj: Any = None, *, id: str | None = None, retry: int | None = None) -> None:
        data = b"" if obj is None else json.dumps(obj).encode()
        await self._send(h11.Data(data=encode_event(data, id=id, retry=retry)))

    async def raw(self, data: bytes) -> None:
        await self._send(h11.Data(data=data))

    async def end(self) -> None:
        await self._send(h11.EndOfMessage())

    async def drop(self) -> None:
        """Close the connection mid-message (a clean FIN)."""
        self.closed = True
        await self.stream.aclose()

    async def reset(self) -> None:
        """Close the connection with a TCP reset."""
        self.closed = True
        self.stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        await self.stream.aclose()


Handler = Callable[[Request, Conn], Awaitable[None]]


class Server:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[Request] = []
        self.connections = 0
        self.active = 0
        self.max_active = 0
        self.port = 0
        self.scope = trio.CancelScope()
        self.ssl_context: ssl.SSLContext | None = None

    @property
    def url(self) -> str:
        scheme = "https" if self.ssl_context is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}/mcp"

    def of(self, method: str, rpc: str | None = None) -> list[Request]:
        return [r for r in self.requests if r.method == method and (rpc is None or r.rpc_method == rpc)]

    async def _connection(self, stream: Any) -> None:
        self.connections += 1
        if self.ssl_context is not None:
            stream = trio.SSLStream(stream, self.ssl_context, server_side=True)
        conn = Conn(stream)
        try:
            while True:
                req = await conn.next_request()
                if req is None:
                    return
                self.requests.append(req)
                self.active += 1
                self.max_active = max(self.max_active, self.active)
                try:
                    await self.handler(req, conn)
                finally:
                    self.active -= 1
                if conn.closed or conn.h11.our_state is not h11.DONE or conn.h11.their_state is not h11.DONE:
                    return
                conn.h11.start_next_cycle()
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError, OSError):
            pass
        finally:
            if not conn.closed:
                await trio.aclose_forcefully(stream)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        with self.scope:
            listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
            self.port = listeners[0].socket.getsockname()[1]
            async with trio.open_nursery() as nursery:
                nursery.start_soon(trio.serve_listeners, self._connection, listeners)
                task_status.started()

    def stop(self) -> None:
        """Stop listening and drop every connection (later connects are refused)."""
        self.scope.cancel()


async def start(nursery: trio.Nursery, handler: Handler, ssl_context: ssl.SSLContext | None = None) -> Server:
    server = Server(handler)
    server.ssl_context = ssl_context
    await nursery.start(server.run)
    return server


SESSION = "sess-1"


def mcp_handler(
    on_request: Handler | None = None,
    *,
    get: Handler | None = None,
    delete_status: int = 200,
    session: str | None = SESSION,
) -> Handler:
    """A small Streamable HTTP server: initialize, 202 for notifications, 405 for GET by default."""

    async def handler(req: Request, conn: Conn) -> None:
        hs = [("Mcp-Session-Id", session)] if session else []
        if req.method == "GET":
            if get is not None:
                await get(req, conn)
            else:
                await conn.respond(405)
            return
        if req.method == "DELETE":
            await conn.respond(delete_status)
            return
        body = req.json
        if req.rpc_method == "initialize":
            result = {
                "protocolVersion": body["params"]["protocolVersion"],
                "capabilities": {"tools": {}, "logging": {}},
                "serverInfo": {"name": "raw", "version": "0"},
            }
            await conn.json(200, {"jsonrpc": "2.0", "id": body["id"], "result": result}, hs)
        elif "id" not in body or "method" not in body:
            await conn.respond(202)
        elif on_request is not None:
            await on_request(req, conn)
        else:
            await conn.json(200, {"jsonrpc": "2.0", "id": body["id"], "result": {}})

    return handler


def frame(obj: Any) -> Frame:
    return Frame(json.dumps(obj).encode())


def request(id: Any, method: str, params: Any = None) -> Frame:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        msg["params"] = params
    return frame(msg)


async def receive_json(channel: HTTPClientChannel, timeout: float = 5) -> Any:
    with trio.fail_after(timeout):
        return json.loads((await channel.receive()).data)


async def handshake(channel: HTTPClientChannel, version: str = VERSION) -> None:
    """initialize + initialized, straight on the channel."""
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": INFO}
    await channel.send(request(0, "initialize", params))
    reply = await receive_json(channel)
    assert reply["result"]["protocolVersion"] == version
    with trio.fail_after(5):
        await channel.send(frame({"jsonrpc": "2.0", "method": "notifications/initialized"}))


def _certificates(tmp_path: Any) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A throwaway CA (written to ``ca.pem``) and a certificate for 127.0.0.1:
    (server context, client context)."""
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mcp-trio test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(pem))
    (tmp_path / "ca.pem").write_bytes(ca.public_bytes(pem))
    (tmp_path / "key.pem").write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    client_ctx = ssl.create_default_context(cadata=ca.public_bytes(pem).decode())
    return server_ctx, client_ctx
