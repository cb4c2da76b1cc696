"""``mcp-trio serve`` as an operator deploys it: allowed hosts and origins, TLS,
graceful shutdown on SIGINT / SIGTERM, --version, flags from the environment
and a config file."""

from __future__ import annotations

import json
import logging
import signal
import ssl
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio

from mcp_trio import open_session
from mcp_trio._cli import main
from mcp_trio._cli._config import ConfigError, resolve
from mcp_trio._version import __version__
from mcp_trio.transports.http._request import _RefusalLog
from tests._support.cli import HTTP_HEADERS as HEADERS
from tests._support.cli import INIT, ROOT, Served, parsed, serve_parser, serving, session_headers
from tests._support.doors import DOORS
from tests._support.engine import call

SLOW_APP = """
import sys
import trio
from mcp_trio.server import Server

server = Server("slow", "1.0")


@server.tool
async def slow(seconds: float) -> str:
    "Sleep, then answer."
    print("slow tool started", file=sys.stderr, flush=True)
    await trio.sleep(seconds)
    return "done"
"""


# ------------------------------------------------------------------ helpers


@pytest.fixture
def slow_app(tmp_path: Path) -> Path:
    (tmp_path / "slow_app.py").write_text(SLOW_APP)
    return tmp_path


# ------------------------------------------------------------------ --version


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--version"], ["serve", "--version"]):
        with pytest.raises(SystemExit) as exit:
            main(argv)
        assert exit.value.code == 0
        assert capsys.readouterr().out.strip() == f"mcp-trio {__version__}"


# ------------------------------------------------------- allowed hosts / origins


def test_allowed_host_and_origin_over_http(tmp_path: Path) -> None:
    args = ["examples/everything.py", "--http", "127.0.0.1:0", "--allowed-host", "api.example.com"]
    args += ["--allowed-origin", "https://app.example.com"]
    with serving(args, ROOT) as served, httpx2.Client(timeout=10) as client:
        url = served.url
        port = url.rsplit(":", 1)[1].split("/")[0]
        # the allowed name, on the server's port or any other (a proxy in front)
        for host in (f"api.example.com:{port}", "api.example.com", "API.example.com:443"):
            r = client.post(url, headers={**HEADERS, "host": host}, json=INIT)
            assert r.status_code == 200, (host, r.text)
        assert client.post(url, headers=HEADERS, json=INIT).status_code == 200  # localhost still
        for _ in range(3):  # logged once
            r = client.post(url, headers={**HEADERS, "host": "evil.example:8000"}, json=INIT)
            assert r.status_code == 421
        origin = {"host": "api.example.com", "origin": "https://app.example.com"}
        assert client.post(url, headers={**HEADERS, **origin}, json=INIT).status_code == 200
        for _ in range(2):
            other = {"host": "api.example.com", "origin": "https://evil.example"}
            assert client.post(url, headers={**HEADERS, **other}, json=INIT).status_code == 403
        served.wait_for("refused Origin")
        served.proc.send_signal(signal.SIGTERM)
        code, err = served.finish()
    assert code == 0
    host_line = "refused Host 'evil.example:8000' (421): allow it with --allowed-host evil.example"
    origin_line = (
        "refused Origin 'https://evil.example' (403): allow it with --allowed-origin https://evil.example"
    )
    assert err.count(host_line) == 1 and err.count(origin_line) == 1, err
    assert "WARNING mcp_trio.http" in err


def test_any_host_with_a_star(tmp_path: Path) -> None:
    args = ["examples/everything.py", "--http", "127.0.0.1:0", "--allowed-host", "*"]
    with serving(args, ROOT) as served, httpx2.Client(timeout=10) as client:
        r = client.post(served.url, headers={**HEADERS, "host": "whatever.example"}, json=INIT)
        assert r.status_code == 200


def test_refusal_log_is_bounded(caplog: pytest.LogCaptureFixture) -> None:
    refusals = _RefusalLog(limit=3)
    with caplog.at_level(logging.WARNING, logger="mcp_trio.http"):
        for _round in range(2):
            for i in range(100):
                refusals.note("Host", f"h{i}.example", 421, f"--allowed-host h{i}.example")
    lines = [r.getMessage() for r in caplog.records]
    assert len(refusals.seen) == 3
    assert [line for line in lines if line.startswith("refused Host")] == [
        f"refused Host 'h{i}.example' (421): allow it with --allowed-host h{i}.example "
        "(mcp-trio serve) or allowed_hosts=[...]"
        for i in range(3)
    ]
    summaries = [line for line in lines if line.startswith("refused ") and "more requests" in line]
    # 194 refusals past the limit: a summary at 1, 2, 4 ... 128
    assert len(summaries) == 8 and summaries[-1].startswith("refused 128 more requests")
    refusals.note("Host", "x" * 10_000, 421, None)  # (remembered nothing more, logged nothing long)
    assert all(len(r.getMessage()) < 400 for r in caplog.records)


# ------------------------------------------------------------------ TLS


def certificates(directory: Path) -> tuple[ssl.SSLContext, Path, Path]:
    """A throwaway CA and a certificate for 127.0.0.1 signed by it: (a client context trusting
    the CA, the certificate file, its key file)."""
    from tests._support.http_client import _certificates

    _, trusted = _certificates(directory)
    return trusted, directory / "cert.pem", directory / "key.pem"


@pytest.mark.parametrize("front_door", DOORS)
def test_tls_over_http(tmp_path: Path, front_door: str) -> None:
    trusted, cert, key = certificates(tmp_path)
    args = ["examples/everything.py", "--http", "127.0.0.1:0", "--front-door", front_door]
    args += ["--certfile", str(cert), "--keyfile", str(key)]
    with serving(args, ROOT) as served:
        url = served.url
        assert url.startswith("https://127.0.0.1:")
        with httpx2.Client(timeout=10, verify=trusted) as client:
            r = client.post(url, headers=HEADERS, json=INIT)
            assert r.status_code == 200 and r.json()["result"]["serverInfo"]["name"] == "mcp-trio-everything"
            headers = session_headers(client, url)
            r = client.post(url, headers=headers, json=call(2, "test_simple_text"))
            assert r.status_code == 200 and "result" in r.text
        with httpx2.Client(timeout=10) as untrusting, pytest.raises(httpx2.ConnectError):
            untrusting.post(url, headers=HEADERS, json=INIT)  # the system's CAs do not know it
        with httpx2.Client(timeout=10) as plain, pytest.raises(httpx2.HTTPError):
            plain.post("http" + url[5:], headers=HEADERS, json=INIT)  # no plain HTTP on that port
        served.proc.send_signal(signal.SIGTERM)
        assert served.finish()[0] == 0


def test_http2_over_tls_on_the_hypercorn_door(tmp_path: Path) -> None:
    """ALPN picks HTTP/2; calls from several tasks share the one connection, their answers
    written in turns (hypercorn's streams, the door's writes).  (The client is async on one
    thread: a TLS socket shared by threads, as a sync HTTP/2 client's is, can read a
    spurious end of file, OpenSSL's connections being for one thread at a time.)"""
    trusted, cert, key = certificates(tmp_path)
    args = ["examples/everything.py", "--http", "127.0.0.1:0", "--front-door", "hypercorn"]
    args += ["--certfile", str(cert), "--keyfile", str(key)]
    with serving(args, ROOT) as served:
        url = served.url

        async def main() -> list[str]:
            answers: list[str] = []
            async with httpx2.AsyncClient(timeout=10, verify=trusted, http1=False, http2=True) as client:
                r = await client.post(url, headers=HEADERS, json=INIT)
                assert r.http_version == "HTTP/2" and r.status_code == 200
                headers = {**HEADERS, "mcp-session-id": r.headers["mcp-session-id"]}
                headers["mcp-protocol-version"] = "2025-11-25"
                initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                assert (await client.post(url, headers=headers, json=initialized)).status_code == 202

                async def calls(first: int) -> None:
                    for n in range(first, first + 5):
                        r = await client.post(url, headers=headers, json=call(n, "test_simple_text"))
                        assert r.http_version == "HTTP/2" and r.json()["id"] == n
                        answers.append(r.json()["result"]["content"][0]["text"])

                with trio.fail_after(30):
                    async with trio.open_nursery() as nursery:
                        for first in range(10, 90, 10):
                            nursery.start_soon(calls, first)
            return answers

        answers = trio.run(main)
        assert len(answers) == 40 and set(answers) == {"This is a simple text response for testing."}
        served.proc.send_signal(signal.SIGTERM)
        assert served.finish()[0] == 0


def test_tls_over_websocket(tmp_path: Path) -> None:
    from mcp_trio.transports.websocket import open_websocket_client

    trusted, cert, key = certificates(tmp_path)
    args = ["examples/everything.py", "--ws", "127.0.0.1:0", "--certfile", str(cert), "--keyfile", str(key)]
    with serving(args, ROOT) as served:
        url = served.url
        assert url.startswith("wss://127.0.0.1:")

        async def main() -> str:
            with trio.fail_after(20):
                async with open_websocket_client(url, ssl_context=trusted) as channel:
                    async with open_session(channel, role="client", info={"name": "t", "version": "1"}) as s:
                        await s.connect()
                        return str(s.peer_info["name"])

        assert trio.run(main) == "mcp-trio-everything"


def test_a_bad_certificate_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "nope.pem")
    assert main(["serve", "examples/everything.py", "--http", "127.0.0.1:0", "--certfile", missing]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcp-trio serve: error: --certfile/--keyfile: cannot load") and "nope.pem" in err
    assert main(["serve", "examples/everything.py", "--http", "127.0.0.1:0", "--keyfile", missing]) == 2
    assert "--keyfile needs --certfile" in capsys.readouterr().err


# ------------------------------------------------------------- graceful shutdown


def post_in_thread(client: httpx2.Client, url: str, headers: dict[str, str], body: Any) -> dict[str, Any]:
    """POST ``body`` in a thread of its own: fills ``box["response"]`` (or ``box["error"]``)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["response"] = client.post(url, headers=headers, json=body)
        except Exception as exc:
            box["error"] = exc

    box["thread"] = threading.Thread(target=run, daemon=True)
    box["thread"].start()
    return box


def slow_call_in_flight(served: Served, client: httpx2.Client, seconds: float) -> dict[str, Any]:
    """Open a session and call the slow tool in a thread; return once it runs (see post_in_thread)."""
    url = served.url
    box = post_in_thread(client, url, session_headers(client, url), call(2, "slow", seconds=seconds))
    served.wait_for("slow tool started")
    return box


def refused_within(url: str, seconds: float) -> bool:
    """Whether a new connection to ``url`` is refused within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with httpx2.Client(timeout=2) as fresh:
                fresh.post(url, headers=HEADERS, json=INIT)
        except httpx2.ConnectError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("front_door", DOORS)
def test_sigterm_lets_the_call_in_flight_finish(slow_app: Path, front_door: str) -> None:
    args = ["slow_app.py", "--http", "127.0.0.1:0", "--front-door", front_door]
    with serving(args, slow_app) as served, httpx2.Client(timeout=20) as client:
        url = served.url
        box = slow_call_in_flight(served, client, 1.5)
        started = time.monotonic()
        served.proc.send_signal(signal.SIGTERM)
        assert refused_within(url, 1.0)  # no new connection once the signal came
        box["thread"].join(20)
        response = box["response"]
        assert response.status_code == 200
        assert "done" in response.text and time.monotonic() - started < 10
        code, err = served.finish()
    assert code == 0, err
    assert "mcp-trio serve: stopped after SIGTERM (1 request finished, 0 cancelled)" in err
    assert "Traceback" not in err and "ExceptionGroup" not in err


@pytest.mark.parametrize("front_door", DOORS)
def test_the_grace_period_ends_in_cancellation(slow_app: Path, front_door: str) -> None:
    """A call still in flight at the end of the grace period is answered with a JSON-RPC error
    saying so, on every door (a closed connection, or hypercorn's empty 500, told nothing)."""
    args = ["slow_app.py", "--http", "127.0.0.1:0", "--grace-period", "0.5", "--front-door", front_door]
    with serving(args, slow_app) as served, httpx2.Client(timeout=20) as client:
        box = slow_call_in_flight(served, client, 60)
        started = time.monotonic()
        served.proc.send_signal(signal.SIGINT)
        code, err = served.finish()
        assert time.monotonic() - started < 8
        box["thread"].join(20)
    assert "error" not in box, box.get("error")
    response = box["response"]
    assert response.status_code == 200, response.text
    assert '"code":-32603' in response.text.replace(" ", "")
    assert "cancelled by server shutdown: the grace period is over" in response.text
    assert code == 0, err
    assert "stopped after SIGINT: the grace period of 0.5 s is over (0 requests finished, 1 cancelled)" in err
    assert "Traceback" not in err and "ExceptionGroup" not in err


def test_a_second_signal_stops_at_once(slow_app: Path) -> None:
    args = ["slow_app.py", "--http", "127.0.0.1:0", "--grace-period", "60"]
    with serving(args, slow_app) as served, httpx2.Client(timeout=20) as client:
        url = served.url
        box = slow_call_in_flight(served, client, 60)
        served.proc.send_signal(signal.SIGINT)
        assert refused_within(url, 1.0)
        started = time.monotonic()
        served.proc.send_signal(signal.SIGINT)
        code, err = served.finish()
        assert time.monotonic() - started < 5
        box["thread"].join(20)
    assert code == 0, err
    assert "stopped after SIGINT, then SIGINT: not waiting (0 requests finished, 1 cancelled)" in err
    assert "Traceback" not in err


def test_sigterm_over_stdio(slow_app: Path) -> None:
    with serving(["slow_app.py"], slow_app) as served:
        stdin, stdout = served.proc.stdin, served.proc.stdout
        assert stdin is not None and stdout is not None
        messages = [
            INIT,
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            call(2, "slow", seconds=1),
        ]
        stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        stdin.flush()
        assert json.loads(stdout.readline())["id"] == 1
        served.wait_for("slow tool started")
        served.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)  # (the signal is taken at once; no output tells when)
        stdin.write(json.dumps(call(3, "slow", seconds=1)).encode() + b"\n")  # after the signal
        stdin.flush()
        answers = {}
        for _ in range(2):
            message = json.loads(stdout.readline())
            answers[message["id"]] = message
        assert answers[2]["result"]["content"][0]["text"] == "done"
        assert answers[3]["error"]["message"] == "the server is shutting down"
        code, err = served.finish()
    assert code == 0, err
    assert "stopped after SIGTERM (1 request finished, 0 cancelled, 1 refused)" in err


def test_sigterm_over_websocket(slow_app: Path) -> None:
    from mcp_trio.transports.websocket import open_websocket_client

    with serving(["slow_app.py", "--ws", "127.0.0.1:0"], slow_app) as served:
        url = served.url

        async def main() -> str:
            with trio.fail_after(20):
                async with open_websocket_client(url) as channel:
                    async with open_session(channel, role="client", info={"name": "t", "version": "1"}) as s:
                        await s.connect()
                        async with trio.open_nursery() as nursery:

                            async def signal_when_started() -> None:
                                await trio.to_thread.run_sync(served.wait_for, "slow tool started")
                                served.proc.send_signal(signal.SIGTERM)

                            nursery.start_soon(signal_when_started)
                            result = await s.request(
                                "tools/call", {"name": "slow", "arguments": {"seconds": 1}}
                            )
                        return str(result.content[0].text)

        assert trio.run(main) == "done"
        code, err = served.finish()
    assert code == 0, err
    assert "stopped after SIGTERM (1 request finished, 0 cancelled)" in err


# ------------------------------------------------------- environment and config


def test_flags_from_the_environment_and_a_config_file(tmp_path: Path) -> None:
    config = tmp_path / "serve.toml"
    config.write_text(
        textwrap.dedent(
            """
            http = "0.0.0.0:8000"
            allowed-host = ["a.example", "b.example"]
            max_connections = 50
            stateless = true
            grace-period = 3
            front-door = "hypercorn"
            """
        )
    )
    args = parsed(["--config", str(config)], {})
    assert (args.http, args.allowed_host, args.max_connections) == (
        "0.0.0.0:8000",
        ["a.example", "b.example"],
        50,
    )
    assert args.stateless is True and args.grace_period == 3.0 and args.front_door == "hypercorn"
    assert args.max_sessions is None and args.log_level == "warning" and args.path == "/mcp"  # defaults
    # the environment over the file, the command line over both
    env = {
        "MCP_TRIO_ALLOWED_HOST": "c.example, d.example",
        "MCP_TRIO_MAX_CONNECTIONS": "60",
        "MCP_TRIO_STATELESS": "no",
    }
    args = parsed(["--config", str(config), "--max-connections", "70"], env)
    assert args.allowed_host == ["c.example", "d.example"] and args.max_connections == 70
    assert args.stateless is False and args.http == "0.0.0.0:8000"
    args = parsed(["--allowed-host", "e.example"], {**env, "MCP_TRIO_CONFIG": str(config)})
    assert args.allowed_host == ["e.example"] and args.front_door == "hypercorn"


@pytest.mark.parametrize(
    ("environ", "config", "message"),
    [
        ({"MCP_TRIO_MAX_CONNECTIONS": "x"}, "", "MCP_TRIO_MAX_CONNECTIONS: invalid int value 'x'"),
        ({"MCP_TRIO_MAX_CONNECTIONS": "0"}, "", "MCP_TRIO_MAX_CONNECTIONS: must be at least 1, got 0"),
        ({"MCP_TRIO_GRACE_PERIOD": "soon"}, "", "MCP_TRIO_GRACE_PERIOD: invalid float value 'soon'"),
        ({"MCP_TRIO_FRONT_DOOR": "nginx"}, "", "MCP_TRIO_FRONT_DOOR: invalid choice 'nginx'"),
        ({"MCP_TRIO_STATELESS": "maybe"}, "", "MCP_TRIO_STATELESS: invalid boolean value 'maybe'"),
        ({}, "max-conections = 5", "unknown key 'max-conections'"),
        ({}, "max-connections = 'many'", "max-connections: invalid int value 'many'"),
        ({}, "stateless = 'yes'", "stateless: invalid boolean value 'yes'"),
        ({}, "http = [1, 2]", "http: invalid value [1, 2]"),
        ({}, "http = ", "is not valid TOML"),
    ],
)
def test_bad_values_are_named(tmp_path: Path, environ: dict[str, str], config: str, message: str) -> None:
    argv = []
    if config:
        (tmp_path / "c.toml").write_text(config + "\n")
        argv = ["--config", str(tmp_path / "c.toml")]
    with pytest.raises(ConfigError) as error:
        parsed(argv, environ)
    assert message in str(error.value)


def test_config_errors_reach_the_user(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "c.toml").write_text("colour = 'blue'\n")
    assert main(["serve", "app.py", "--config", str(tmp_path / "c.toml")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcp-trio serve: error: ") and "unknown key 'colour'" in err
    assert main(["serve", "app.py", "--config", str(tmp_path / "none.toml")]) == 2
    assert "--config: cannot read" in capsys.readouterr().err


def test_every_flag_has_an_environment_variable() -> None:
    """Generic: whatever flags serve has (added later too), each is settable."""
    parser = serve_parser()
    serve = parser.parse_args(["serve", "x.py"]).func.args[0]
    flags = [a for a in serve._actions if a.option_strings and a.dest not in ("help", "version", "config")]
    assert len(flags) > 25
    for action in flags:
        args = serve.parse_args(["x.py"])
        assert not hasattr(args, action.dest)  # left to resolve()
        value = "1" if action.type is not None else "a.example" if action.nargs != 0 else "true"
        if action.choices is not None:
            value = list(action.choices)[-1]
        resolve(serve, args, {f"MCP_TRIO_{action.dest.upper()}": value})
        got = getattr(args, action.dest)
        assert got not in (None, False, []), action.dest


def test_served_from_the_environment(slow_app: Path) -> None:
    env = {"MCP_TRIO_HTTP": "127.0.0.1:0", "MCP_TRIO_ALLOWED_HOST": "api.example.com,b.example"}
    with serving(["slow_app.py"], slow_app, env) as served, httpx2.Client(timeout=10) as client:
        r = client.post(served.url, headers={**HEADERS, "host": "api.example.com"}, json=INIT)
        assert r.status_code == 200


def test_an_address_in_use_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "examples/everything.py", "--http", f"127.0.0.1:{port}"]) == 1
    err = capsys.readouterr().err
    assert (
        err.startswith("mcp-trio serve: error: cannot serve: ") and "in use" in err and "Traceback" not in err
    )
