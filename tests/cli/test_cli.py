"""The mcp-trio command."""

from __future__ import annotations

import argparse
import sys
import textwrap
import time
from pathlib import Path

import pytest
import trio

from mcp_trio import open_session, open_stdio_client
from mcp_trio._cli import load_server, main
from mcp_trio._cli._serve import _ServeError, _split_target
from mcp_trio.types import _versions
from tests._support.cli import HTTP_HEADERS, INIT, serving_everything_over_http, session_headers
from tests._support.doors import DOORS
from tests._support.paths import ROOT


def test_versions_lists_every_revision(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["versions"]) == 0
    out = capsys.readouterr().out
    for version in _versions.SUPPORTED_VERSIONS:
        assert version in out
    assert "batching" in out and "stateless" in out


def test_codegen_check_passes_options_through(
    mcp_schema_dir: object, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["codegen", "--check", "--schema-dir", str(mcp_schema_dir)]) == 0


# ------------------------------------------------------------------- serve

SERVER_MODULE = """
from mcp_trio.server import Server

{body}
"""


@pytest.fixture
def isolated_imports(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Undo the sys.path entries ``serve`` adds; work in ``tmp_path``."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_module(directory: Path, name: str, body: str) -> Path:
    path = directory / f"{name}.py"
    path.write_text(SERVER_MODULE.format(body=textwrap.dedent(body)))
    return path


def serve_error(capsys: pytest.CaptureFixture[str], target: str, code: int = 2) -> str:
    assert main(["serve", target]) == code
    captured = capsys.readouterr()
    assert captured.out == ""  # stdout belongs to the protocol, even for errors
    assert captured.err.startswith("mcp-trio serve: error: ")
    return captured.err


def test_serve_missing_file(isolated_imports: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = serve_error(capsys, "does_not_exist.py")
    assert "no such file: does_not_exist.py" in err
    err = serve_error(capsys, "sub/dir/app.py:server")
    assert "no such file: sub/dir/app.py" in err


def test_serve_missing_module(isolated_imports: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = serve_error(capsys, "no_such_package.app:server")
    assert "no such file or module: no_such_package.app" in err


def test_serve_module_without_a_server(isolated_imports: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_module(isolated_imports, "cli_empty", 'print("printed while importing")\nserver = 42\n')
    assert main(["serve", "cli_empty.py"]) == 2
    captured = capsys.readouterr()
    # Output while importing went to stderr, not to stdout.
    assert captured.out == ""
    assert "printed while importing" in captured.err
    assert "no Server found in cli_empty.py" in captured.err
    assert "cli_empty.py:ATTRIBUTE" in captured.err


def test_serve_bad_attribute(isolated_imports: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_module(isolated_imports, "cli_attr", 'app = Server("a")\nNAME = "not a server"\n')
    err = serve_error(capsys, "cli_attr.py:nope")
    assert "cli_attr.py has no attribute 'nope'" in err
    err = serve_error(capsys, "cli_attr.py:NAME")
    assert "cli_attr.py:NAME is a str, not a mcp_trio.server.Server" in err
    err = serve_error(capsys, "cli_attr.py:")
    assert "is not FILE[:ATTRIBUTE] or MODULE[:ATTRIBUTE]" in err


def test_serve_several_servers_need_a_name(
    isolated_imports: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_module(isolated_imports, "cli_two", 'one = Server("one")\ntwo = Server("two")\n')
    err = serve_error(capsys, "cli_two.py")
    assert "cli_two.py defines several Servers (one, two); choose one with cli_two.py:one" in err


def test_serve_import_failure(isolated_imports: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_module(isolated_imports, "cli_broken", 'raise RuntimeError("broken on purpose")\n')
    err = serve_error(capsys, "cli_broken.py", code=1)
    assert "importing cli_broken.py failed" in err
    assert "RuntimeError: broken on purpose" in err and "Traceback" in err


def test_a_target_splits_at_its_last_colon_but_never_inside_a_windows_drive() -> None:
    assert _split_target("app.py") == ("app.py", None)
    assert _split_target("pkg.mod:app") == ("pkg.mod", "app")
    assert _split_target(r"C:\srv\app.py") == (r"C:\srv\app.py", None)
    assert _split_target(r"C:\srv\app.py:server") == (r"C:\srv\app.py", "server")
    assert _split_target("d:/srv/app.py:server") == ("d:/srv/app.py", "server")
    assert _split_target("d:/srv/app.py") == ("d:/srv/app.py", None)
    with pytest.raises(_ServeError, match="is not FILE"):
        _split_target("app.py:")


def test_load_server_finds_the_server(isolated_imports: Path) -> None:
    write_module(isolated_imports, "cli_pick", 'server = Server("default")\nother = Server("other")\n')
    assert load_server("cli_pick.py").info["name"] == "default"
    write_module(isolated_imports, "cli_pick2", 'other = Server("other")\nserver = Server("default")\n')
    assert load_server(str(isolated_imports / "cli_pick2.py:other")).info["name"] == "other"
    # A single Server under any name is found without being named.
    write_module(isolated_imports, "cli_single", 'mcp = Server("single")\nalias = mcp\n')
    assert load_server("cli_single.py").info["name"] == "single"
    # A dotted module name (found from the current directory, like python -m).
    package = isolated_imports / "cli_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    write_module(package, "app", 'app = Server("in a package")\n')
    assert load_server("cli_pkg.app:app").info["name"] == "in a package"
    assert load_server("cli_pkg.app").info["name"] == "in a package"


async def test_serve_speaks_stdio_and_logs_to_stderr(tmp_path: Path) -> None:
    """A real ``mcp-trio serve`` process: protocol on stdout, everything else on stderr."""
    write_module(
        tmp_path,
        "cli_logging_app",
        """
        import logging

        print("hello from import time")
        app = Server("logging-app", "1.0")

        @app.tool
        def shout(text: str) -> str:
            "Upper-case the text (and log about it)."
            logging.getLogger("cli_logging_app").info("shouting %s", text)
            print("a stray print")
            return text.upper()
        """,
    )
    argv = [sys.executable, "-m", "mcp_trio._cli", "serve", "--log-level", "info"]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    with (tmp_path / "stderr.txt").open("w+b") as stderr, trio.fail_after(20):
        async with open_stdio_client(
            [*argv, "cli_logging_app.py:app"], env=env, cwd=tmp_path, stderr=stderr
        ) as proc:
            info = {"name": "cli-test", "version": "1"}
            async with open_session(proc.channel, role="client", info=info) as client:
                await client.connect()
                assert client.peer_info["name"] == "logging-app"
                result = await client.request("tools/call", {"name": "shout", "arguments": {"text": "hi"}})
                assert result.content[0].text == "HI"
            await proc.process.wait()
        assert proc.process.returncode == 0
        stderr.seek(0)
        err = stderr.read().decode()
    assert "hello from import time" in err
    assert "a stray print" in err
    assert "INFO cli_logging_app: shouting hi" in err


async def test_serve_freezes_what_startup_built(tmp_path: Path) -> None:
    """The serve process moves what its import built out of the GC's way (gc.freeze), so that
    full collections under load walk only what the server builds as it serves, and starts
    young collections less often (a burst of requests no longer starts one every 700
    objects)."""
    write_module(
        tmp_path,
        "cli_gc_app",
        """
        import gc

        app = Server("gc-app", "1.0")

        @app.tool
        def frozen() -> str:
            "The objects in the permanent generation."
            return str(gc.get_freeze_count())

        @app.tool
        def thresholds() -> str:
            "The collector's thresholds."
            return " ".join(map(str, gc.get_threshold()))
        """,
    )
    argv = [sys.executable, "-m", "mcp_trio._cli", "serve", "cli_gc_app.py:app"]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    with trio.fail_after(20):
        async with open_stdio_client(argv, env=env, cwd=tmp_path) as proc:
            async with open_session(
                proc.channel, role="client", info={"name": "t", "version": "1"}
            ) as client:
                await client.connect()
                result = await client.request("tools/call", {"name": "frozen", "arguments": {}})
                thresholds = await client.request("tools/call", {"name": "thresholds", "arguments": {}})
            await proc.process.wait()
    assert int(result.content[0].text) > 10_000  # the library, its types and the server
    # Young collections every 20,000 net new objects, not CPython's 700 (docs: _tuning).
    assert thresholds.content[0].text.split() == ["20000", "10", "10"]


@pytest.mark.parametrize("relay", [False, True], ids=["default", "reader-relay"])
async def test_serve_reader_relay_flag(isolated_imports: Path, relay: bool) -> None:
    tmp_path = isolated_imports
    write_module(
        tmp_path,
        "cli_relay_app",
        """
        import trio

        app = Server("relay-app", "1.0")

        @app.tool
        async def where() -> str:
            "The name of the task the call runs in."
            return trio.lowlevel.current_task().name
        """,
    )
    argv = [sys.executable, "-m", "mcp_trio._cli", "serve", "cli_relay_app.py:app"]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    with trio.fail_after(20):
        async with open_stdio_client(
            [*argv, "--reader-relay"] if relay else argv, env=env, cwd=tmp_path
        ) as proc:
            async with open_session(
                proc.channel, role="client", info={"name": "t", "version": "1"}
            ) as client:
                await client.connect()
                names = [
                    (await client.request("tools/call", {"name": "where", "arguments": {}})).content[0].text
                    for _ in range(3)
                ]
            await proc.process.wait()
    handler_task = "mcp_trio._engine._handlers.HandlerRunner.handle_request"
    if relay:  # a call read last ran in the task that read it
        assert handler_task not in names, names
    else:
        assert names == [handler_task] * 3


def test_serve_over_streamable_http() -> None:
    import httpx2

    with serving_everything_over_http() as url, httpx2.Client(timeout=10) as client:
        r = client.post(url, headers=HTTP_HEADERS, json=INIT)
        assert r.status_code == 200 and "mcp-session-id" in r.headers
        assert r.json()["result"]["serverInfo"]["name"] == "mcp-trio-everything"


def test_serve_stateless_http() -> None:
    import httpx2

    with serving_everything_over_http("--stateless") as url, httpx2.Client(timeout=10) as client:
        r = client.post(url, headers=HTTP_HEADERS, json=INIT)
        assert r.status_code == 200 and "mcp-session-id" not in r.headers
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "test_simple_text"}}
        r = client.post(url, headers={**HTTP_HEADERS, "mcp-protocol-version": "2025-11-25"}, json=call)
        assert r.json()["result"]["content"][0]["text"]
        assert client.get(url, headers={"accept": "text/event-stream"}).status_code == 405


def test_serve_http_session_limits() -> None:
    import httpx2

    options = ("--max-sessions", "1", "--session-idle-timeout", "600")
    with serving_everything_over_http(*options) as url, httpx2.Client(timeout=10) as client:
        r = client.post(url, headers=HTTP_HEADERS, json=INIT)
        assert r.status_code == 200
        headers = {
            **HTTP_HEADERS,
            "mcp-session-id": r.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert client.post(url, headers=headers, json=initialized).status_code == 202
        # the table is full: a new session ends the least recently used one
        assert client.post(url, headers=HTTP_HEADERS, json=INIT).status_code == 200
        assert client.post(url, headers=headers, json=initialized).status_code == 404


@pytest.mark.parametrize("front_door", DOORS)
def test_serve_http_connection_limits(front_door: str) -> None:
    import socket
    import time

    import httpx2

    def connect(port: int, source: str) -> socket.socket:
        sock = socket.socket()
        sock.settimeout(5)
        sock.bind((source, 0))
        sock.connect(("127.0.0.1", port))
        return sock

    def closed_within(sock: socket.socket) -> float:
        start = time.monotonic()
        try:
            while sock.recv(4096):
                pass
        except ConnectionResetError:
            pass
        return time.monotonic() - start

    options = ("--max-connections", "4", "--max-connections-per-client", "1", "--header-timeout", "2")
    options += ("--keepalive-timeout", "5", "--request-timeout", "5", "--write-timeout", "5")
    options += ("--front-door", front_door)
    with serving_everything_over_http(*options) as url, httpx2.Client(timeout=10) as client:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        first = connect(port, "127.0.0.3")
        second = connect(port, "127.0.0.3")  # past this address's share: closed at once
        assert closed_within(second) < 1
        assert closed_within(first) < 4  # sent no head: closed at the header timeout
        first.close()
        second.close()
        assert client.post(url, headers=HTTP_HEADERS, json=INIT).status_code == 200


def test_serve_http_stream_and_client_limits() -> None:
    """--max-body-size, --max-sessions-per-client, --max-streams(-per-client) and
    --stream-idle-timeout reach the endpoint."""
    import time

    import httpx2

    options = (
        "--max-body-size",
        "1000",
        "--max-sessions-per-client",
        "1",
        "--max-streams",
        "1",
        "--max-streams-per-client",
        "1",
        "--stream-idle-timeout",
        "0.5",
    )
    with serving_everything_over_http(*options) as url, httpx2.Client(timeout=10) as client:
        assert client.post(url, headers=HTTP_HEADERS, content=b" " * 2000).status_code == 413
        r = client.post(url, headers=HTTP_HEADERS, json=INIT)
        headers = {
            **HTTP_HEADERS,
            "mcp-session-id": r.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert client.post(url, headers=headers, json=initialized).status_code == 202
        refused = client.post(url, headers=HTTP_HEADERS, json=INIT)  # this address holds its one session
        assert refused.status_code == 429 and refused.headers["retry-after"] == "5"
        started = time.monotonic()
        with client.stream("GET", url, headers={**headers, "accept": "text/event-stream"}) as stream:
            assert stream.status_code == 200
            other = httpx2.Client(timeout=10)
            with other:
                assert other.get(url, headers={**headers, "accept": "text/event-stream"}).status_code == 409
            body = b"".join(stream.iter_bytes())  # ends by itself: idle
        assert body.endswith(b"retry: 1000\n\n") and time.monotonic() - started >= 0.4


def test_serve_http_queue_and_event_store_bounds() -> None:
    import httpx2

    options = ("--max-queued", "2", "--max-queued-total", "1000", "--event-store-bytes", "4096")
    with serving_everything_over_http(*options) as url, httpx2.Client(timeout=20) as client:
        init = {**INIT, "params": {**INIT["params"], "protocolVersion": "2025-03-26"}}
        r = client.post(url, headers=HTTP_HEADERS, json=init)
        headers = {
            **HTTP_HEADERS,
            "mcp-session-id": r.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-03-26",
        }
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert client.post(url, headers=headers, json=initialized).status_code == 202
        slow = {"name": "slow_compute", "arguments": {"seconds": 0.5}}
        batch = [{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": slow} for i in range(70)]
        replies = client.post(url, headers=headers, json=batch).json()
        # 64 run (max_in_flight), 2 wait, the other 4 are refused at once
        errors = [m["error"] for m in replies if "error" in m]
        assert len(replies) == 70 and len(errors) == 4
        assert all(e["code"] == -32603 and "max_queued=2" in e["message"] for e in errors)


def test_serve_queue_options_reach_every_transport() -> None:
    from mcp_trio._cli._serve import _queue_options

    args = argparse.Namespace(max_queued=5, max_queued_total=None, event_store_bytes=4096)
    assert _queue_options(args, http=True) == {"max_queued": 5, "event_store_bytes": 4096}
    assert _queue_options(args, http=False) == {"max_queued": 5}  # Session options (stdio, --ws)
    with pytest.raises(SystemExit):
        main(["serve", "x.py", "--max-queued", "-1"])


def test_serve_checks_its_http_operations_flags(
    isolated_imports: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_module(isolated_imports, "cli_ops", 'app = Server("a")\n')
    http = ["serve", "cli_ops.py", "--http", "127.0.0.1:0"]
    assert main([*http, "--forwarded-allow-ips", "10.0.0.1,proxy"]) == 2
    err = capsys.readouterr().err
    assert "--forwarded-allow-ips: 'proxy' is not an IP address or network" in err
    assert main([*http, "--metrics-token", "t0ken"]) == 2
    assert "--metrics-token needs --metrics-path" in capsys.readouterr().err
    assert main([*http, "--proxy-protocol-allow-ips", "lb"]) == 2
    assert "--proxy-protocol-allow-ips: 'lb' is not an IP address or network" in capsys.readouterr().err
    assert main([*http, "--front-door", "hypercorn", "--proxy-protocol-allow-ips", "10.0.0.1"]) == 2
    assert "--proxy-protocol-allow-ips needs --http and a lean door" in capsys.readouterr().err


def test_serve_http_bounds_the_posts_of_a_session_in_flight() -> None:
    """--max-posts-per-session reaches the endpoint: past it, a POST of the session gets 429."""
    import threading

    import httpx2

    with (
        serving_everything_over_http("--max-posts-per-session", "1") as url,
        httpx2.Client(timeout=10) as client,
    ):
        headers = session_headers(client, url)
        slow = {"name": "slow_compute", "arguments": {"seconds": 1.0}}
        first: list[int] = []

        def call_slowly() -> None:
            with httpx2.Client(timeout=10) as other:
                message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": slow}
                first.append(other.post(url, headers=headers, json=message).status_code)

        thread = threading.Thread(target=call_slowly)
        thread.start()
        time.sleep(0.4)
        message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": slow}
        refused = client.post(url, headers=headers, json=message)
        thread.join(10)
        assert refused.status_code == 429 and "in flight" in refused.text
        assert first == [200]


def test_serve_ws_takes_the_connection_limits() -> None:
    """--max-connections-per-client reaches the WebSocket door: past it, closed at once."""
    import socket
    import subprocess

    argv = [sys.executable, "-m", "mcp_trio._cli", "serve", "examples/everything.py", "--ws", "127.0.0.1:0"]
    proc = subprocess.Popen(
        [*argv, "--max-connections-per-client", "1"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "WebSocket at ws://127.0.0.1:" in line, line
        port = int(line.split(" at ")[1].split("/")[2].rsplit(":", 1)[1])
        first = socket.create_connection(("127.0.0.1", port), timeout=5)
        time.sleep(0.2)
        second = socket.create_connection(("127.0.0.1", port), timeout=5)
        assert second.recv(100) == b""  # past the address's share
        first.close()
        second.close()
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
