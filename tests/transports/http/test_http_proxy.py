"""The HTTP and WebSocket clients through an HTTP proxy (HTTP_PROXY / HTTPS_PROXY / NO_PROXY),
and TLS trust from SSL_CERT_FILE: a small recording proxy runs in the test."""

from __future__ import annotations

import base64
import json
import ssl
import sys
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from mcp_trio import McpError
from mcp_trio.client import connect_http, connect_websocket
from mcp_trio.server import Server
from mcp_trio.transports.http.client import open_http_client
from mcp_trio.transports.http.client._proxy import Proxy, choose_proxy
from mcp_trio.transports.websocket import WebSocketConnectError
from tests._support.http_client import _certificates, handshake, mcp_handler, receive_json, request, start
from tests._support.paths import ROOT
from tests._support.websocket import serving

PROXY_VARIABLES = ("http_proxy", "https_proxy", "no_proxy", "all_proxy")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No proxy variable of the machine running the tests leaks in."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    yield


class RecordingProxy:
    """An HTTP proxy for the tests: absolute-form requests (rewritten to origin
    form and forwarded) and CONNECT tunnels; records each request head."""

    def __init__(self, credentials: str | None = None, ssl_context: ssl.SSLContext | None = None) -> None:
        self.seen: list[tuple[str, str, dict[str, str]]] = []  # method, target, headers
        self.credentials = credentials  # "user:password" the proxy insists on
        self.ssl_context = ssl_context  # an https:// proxy
        self.port = 0

    @property
    def url(self) -> str:
        return f"{'https' if self.ssl_context else 'http'}://127.0.0.1:{self.port}"

    def methods(self) -> list[str]:
        return [f"{method} {target}" for method, target, _ in self.seen]

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started()
        await trio.serve_listeners(self._connection, listeners)

    async def _connection(self, client: trio.abc.Stream) -> None:
        upstream: trio.SocketStream | None = None
        if self.ssl_context is not None:
            client = trio.SSLStream(client, self.ssl_context, server_side=True)
        try:
            async with client, trio.open_nursery() as nursery:
                buffer = bytearray()
                while (head := await _read_head(client, buffer)) is not None:
                    lines = head.decode("latin-1").split("\r\n")
                    method, target, _ = lines[0].split(" ", 2)
                    headers = {
                        k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])
                    }
                    self.seen.append((method, target, headers))
                    if self.credentials is not None:
                        expected = "Basic " + base64.b64encode(self.credentials.encode()).decode()
                        if headers.get("proxy-authorization") != expected:
                            await client.send_all(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
                            return
                    if method == "CONNECT":
                        host, _, port = target.rpartition(":")
                        upstream = await trio.open_tcp_stream(host, int(port))
                        await client.send_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                        nursery.start_soon(_pipe, upstream, client, nursery.cancel_scope)
                        await upstream.send_all(bytes(buffer))
                        await _pipe(client, upstream, nursery.cancel_scope)
                        return
                    parts = urllib.parse.urlsplit(target)
                    assert parts.scheme == "http" and parts.hostname, f"not in absolute form: {target}"
                    length = int(headers.get("content-length", "0"))
                    while len(buffer) < length:
                        data = await client.receive_some(65536)
                        if not data:
                            return
                        buffer += data
                    body, buffer[:] = bytes(buffer[:length]), buffer[length:]
                    if upstream is None:
                        upstream = await trio.open_tcp_stream(parts.hostname, parts.port or 80)
                        nursery.start_soon(_pipe, upstream, client, nursery.cancel_scope)
                    path = parts.path + (f"?{parts.query}" if parts.query else "")
                    kept = [h for h in lines[1:] if not h.lower().startswith("proxy-authorization:")]
                    forwarded = "\r\n".join([f"{method} {path} HTTP/1.1", *kept]) + "\r\n\r\n"
                    await upstream.send_all(forwarded.encode("latin-1") + body)
                nursery.cancel_scope.cancel()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        finally:
            if upstream is not None:
                upstream.socket.close()


async def _read_head(stream: trio.abc.Stream, buffer: bytearray) -> bytes | None:
    while b"\r\n\r\n" not in buffer:
        data = await stream.receive_some(65536)
        if not data:
            return None
        buffer += data
    end = buffer.index(b"\r\n\r\n")
    head = bytes(buffer[:end])
    del buffer[: end + 4]
    return head


async def _pipe(source: trio.abc.Stream, sink: trio.abc.Stream, scope: trio.CancelScope) -> None:
    try:
        while data := await source.receive_some(65536):
            await sink.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass
    scope.cancel()  # either side ending ends both


def echo_server() -> Server:
    server = Server("behind-proxy", "1")

    @server.tool
    async def echo(text: str) -> str:
        return text

    return server


@asynccontextmanager
async def proxy_and_server(**proxy: Any) -> AsyncIterator[tuple[RecordingProxy, str, trio.Nursery]]:
    """A recording proxy and an MCP server on 127.0.0.1 (its Streamable HTTP URL)."""
    async with trio.open_nursery() as nursery:
        recorder = RecordingProxy(**proxy)
        await nursery.start(recorder.run)
        urls = await nursery.start(partial(echo_server().serve_http, "127.0.0.1", 0))
        yield recorder, urls[0], nursery
        nursery.cancel_scope.cancel()


async def test_http_proxy_from_the_environment_gets_absolute_form_requests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with proxy_and_server() as (proxy, url, _):
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        with trio.fail_after(10):
            async with connect_http(url) as client:
                result = await client.call_tool("echo", {"text": "through"})
                assert result.content[0].text == "through"  # type: ignore[union-attr]
        assert proxy.seen, "the proxy saw nothing"
        assert all(target.startswith(url.split("/mcp")[0] + "/") for _, target, _ in proxy.seen)
        assert f"POST {url}" in proxy.methods() and "CONNECT" not in {m for m, _, _ in proxy.seen}
        assert proxy.seen[0][2]["host"] == url.split("/")[2]


async def test_lower_case_variables_and_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    async with proxy_and_server(credentials="user:p@ss") as (proxy, url, _):
        monkeypatch.setenv("http_proxy", f"http://user:p%40ss@127.0.0.1:{proxy.port}")
        with trio.fail_after(10):
            async with connect_http(url) as client:
                assert (await client.call_tool("echo", {"text": "x"})).isError is False
        expected = "Basic " + base64.b64encode(b"user:p@ss").decode()
        assert proxy.seen and all(h["proxy-authorization"] == expected for _, _, h in proxy.seen)
        # wrong credentials: the 407 is reported, not retried forever
        monkeypatch.setenv("http_proxy", f"http://user:wrong@127.0.0.1:{proxy.port}")
        with trio.fail_after(10), pytest.raises(McpError) as caught:
            async with connect_http(url, connect_timeout=5):
                pass
        assert "407" in caught.value.message


async def test_no_proxy_and_trust_env_bypass_the_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    async with proxy_and_server() as (proxy, url, _):
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
        with trio.fail_after(10):
            async with connect_http(url) as client:
                await client.call_tool("echo", {"text": "direct"})
        assert proxy.seen == []
        monkeypatch.delenv("NO_PROXY")
        with trio.fail_after(10):
            async with connect_http(url, http_options={"trust_env": False}) as client:
                await client.call_tool("echo", {"text": "direct"})
        assert proxy.seen == []
        # an explicit proxy is used whatever the environment says
        monkeypatch.setenv("NO_PROXY", "*")
        with trio.fail_after(10):
            async with connect_http(url, http_options={"proxy": proxy.url}) as client:
                await client.call_tool("echo", {"text": "explicit"})
        assert proxy.seen


async def test_https_goes_through_a_connect_tunnel_trusting_ssl_cert_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server_ctx, _ = _certificates(tmp_path)
    ca_file = tmp_path / "ca.pem"
    async with trio.open_nursery() as nursery:
        proxy = RecordingProxy()
        await nursery.start(proxy.run)
        server = await start(nursery, mcp_handler(), ssl_context=server_ctx)
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # not for https: never used
        # without trusting the CA, the TLS handshake (through the tunnel) fails
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
        async with open_http_client(server.url, listen=False) as channel:
            await channel.send(request(1, "ping"))
            reply = await receive_json(channel)
            assert "CERTIFICATE_VERIFY_FAILED" in reply["error"]["message"], reply
            assert f"through the proxy {proxy.url}" in reply["error"]["message"]
        monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
        async with open_http_client(server.url, listen=False) as channel:
            await handshake(channel)
            await channel.send(request(1, "ping"))
            assert (await receive_json(channel))["id"] == 1
        authority = f"127.0.0.1:{server.port}"
        assert proxy.methods() == [f"CONNECT {authority}", f"CONNECT {authority}"]
        assert proxy.seen[0][2]["host"] == authority
        assert [r.rpc_method for r in server.of("POST")] == [
            "initialize",
            "notifications/initialized",
            "ping",
        ]
        nursery.cancel_scope.cancel()


async def test_an_https_proxy_carries_tls_in_tls_and_absolute_form(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server_ctx, _ = _certificates(tmp_path)  # one certificate for 127.0.0.1: the proxy and the server
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    async with trio.open_nursery() as nursery:
        proxy = RecordingProxy(ssl_context=server_ctx)
        await nursery.start(proxy.run)
        assert proxy.url.startswith("https://")
        tls_server = await start(nursery, mcp_handler(), ssl_context=server_ctx)
        plain_server = await start(nursery, mcp_handler())
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        for server in (tls_server, plain_server):
            async with open_http_client(server.url, listen=False) as channel:
                await handshake(channel)
                await channel.send(request(1, "ping"))
                assert (await receive_json(channel))["id"] == 1
            assert [r.rpc_method for r in server.of("POST")] == [
                "initialize",
                "notifications/initialized",
                "ping",
            ]
        assert proxy.methods()[0] == f"CONNECT 127.0.0.1:{tls_server.port}"
        assert proxy.methods()[1:] == [f"POST {plain_server.url}"] * 3 + [f"DELETE {plain_server.url}"]
        nursery.cancel_scope.cancel()


async def test_a_proxy_refusing_connect_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    server_ctx, _ = _certificates(tmp_path)
    async with trio.open_nursery() as nursery:
        proxy = RecordingProxy(credentials="a:b")
        await nursery.start(proxy.run)
        server = await start(nursery, mcp_handler(), ssl_context=server_ctx)
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        async with open_http_client(server.url, listen=False) as channel:
            await channel.send(request(1, "ping"))
            error = (await receive_json(channel))["error"]
        assert error["data"]["reason"] == "connect"
        assert f"the proxy {proxy.url} refused CONNECT 127.0.0.1:{server.port}: HTTP 407" in error["message"]
        nursery.cancel_scope.cancel()


async def test_websocket_tunnels_through_the_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    async with trio.open_nursery() as nursery:
        proxy = RecordingProxy()
        await nursery.start(proxy.run)
        serve = partial(echo_server().serve_websocket, "127.0.0.1", 0, front_door="wsproto")
        urls = await nursery.start(serve)
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        with trio.fail_after(10):
            async with connect_websocket(urls[0]) as client:
                assert (await client.call_tool("echo", {"text": "ws"})).content[0].text == "ws"  # type: ignore[union-attr]
        assert proxy.methods() == [f"CONNECT {urls[0].split('/')[2]}"]
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        with trio.fail_after(10):
            async with connect_websocket(urls[0]) as client:
                await client.call_tool("echo", {"text": "ws"})
        assert len(proxy.seen) == 1
        # a dead proxy: the failure names it
        monkeypatch.delenv("NO_PROXY")
        with trio.fail_after(10), pytest.raises(WebSocketConnectError) as caught:
            async with connect_websocket(urls[0], websocket_options={"proxy": "127.0.0.1:9"}):
                pass
        assert "through the proxy http://127.0.0.1:9" in str(caught.value)
        nursery.cancel_scope.cancel()


async def test_the_cli_goes_through_the_proxy_with_its_headers() -> None:
    async with proxy_and_server() as (proxy, url, _):
        env = {"PATH": "/usr/bin:/bin", "HTTP_PROXY": proxy.url, "PYTHONPATH": str(ROOT)}
        argv = [
            sys.executable,
            "-m",
            "mcp_trio",
            "call",
            url,
            "echo",
            "text=hi",
            "--header",
            "X-Token: t1",
        ]
        with trio.fail_after(30):
            done = await trio.run_process(
                argv, env=env, capture_stdout=True, capture_stderr=True, check=False
            )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["content"][0]["text"] == "hi"
        assert proxy.seen and all(h["x-token"] == "t1" for _, _, h in proxy.seen)
        assert f"POST {url}" in proxy.methods()


def test_choosing_the_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", ".internal.example,10.0.0.1:8443")
    chosen = choose_proxy("https", "api.example", 443, None, True)
    assert chosen is not None and (chosen.host, chosen.port, chosen.authorization) == (
        "proxy.example",
        3128,
        None,
    )
    assert choose_proxy("http", "api.example", 80, None, True) is None  # no HTTP_PROXY
    assert choose_proxy("https", "svc.internal.example", 443, None, True) is None
    assert choose_proxy("https", "10.0.0.1", 8443, None, True) is None
    assert choose_proxy("https", "10.0.0.1", 443, None, True) is not None
    assert choose_proxy("https", "api.example", 443, None, False) is None
    assert Proxy("http://u:s%3Acret@p:1").url == "http://u:***@p:1"
    assert Proxy("http://u:s%3Acret@p:1").headers() == [("Proxy-Authorization", "Basic dTpzOmNyZXQ=")]
    with pytest.raises(ValueError, match="only http:// and https:// proxies work"):
        Proxy("socks5://p:1080")


async def test_wss_tunnels_through_the_https_proxy_trusting_ssl_cert_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server_ctx, _ = _certificates(tmp_path)
    async with trio.open_nursery() as nursery:
        proxy = RecordingProxy()
        await nursery.start(proxy.run)
        async with serving("wsproto", echo_server().serve_session, ssl_context=server_ctx) as (url, _):
            assert url.startswith("wss://")
            monkeypatch.setenv("HTTPS_PROXY", proxy.url)
            monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
            with trio.fail_after(10):
                async with connect_websocket(url) as client:
                    assert (await client.call_tool("echo", {"text": "wss"})).isError is False
        assert proxy.methods() == [f"CONNECT {url.split('/')[2]}"]
        nursery.cancel_scope.cancel()


async def test_the_oauth_clients_requests_use_the_proxy_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_trio.auth._client_http import OAuthHttp

    async with proxy_and_server() as (proxy, url, _):
        metadata = url.replace("/mcp", "/.well-known/oauth-protected-resource")
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        with trio.fail_after(10):
            reply = await OAuthHttp(timeout=5).request("GET", metadata)
        assert reply.status == 404  # the server has no such document; the proxy carried the question
        assert proxy.methods() == [f"GET {metadata}"]
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        with trio.fail_after(10):
            await OAuthHttp(timeout=5).request("GET", metadata)
        assert len(proxy.seen) == 1
