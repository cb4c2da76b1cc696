"""Benchmark suite: the peers (every server measured and how to start it), started side by side.

:func:`peers` is the table of servers, with their stdio command and their HTTP command for a
port; :func:`stdio_servers` and :func:`http_servers` start some of them at once (stderr to
:data:`LOGS`) and stop them all at the end.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks._run_common import DEFAULT_VENV, HOST, ROOT
from benchmarks._run_node import TsSdk

#: The harness check's Node server (no SDK), run by the Node the TypeScript SDK runs on.
TRIVIAL_NODE = "benchmarks/peers/trivial_node.mjs"


@dataclass(frozen=True)
class Peer:
    key: str
    label: str
    stdio: list[str] | None
    http: Callable[[int], list[str]] | None = None
    check: str = "echo"
    #: Its own client's command, to which ``TRANSPORT DURATION TARGET...`` is added (the
    #: "own clients" workload; see ``benchmarks/sdk_clients.py``).
    own_client: list[str] | None = None


def peers(python: str, ts: TsSdk | None = None) -> dict[str, Peer]:
    """Every server, by key; the TypeScript SDK's has no commands unless ``ts`` is given."""
    bindir = str(Path(python).parent)
    ours = [f"{bindir}/mcp-trio", "serve", "benchmarks/echo_server.py"]
    # Every load client connects from the one loopback address: the per-address session share
    # (a defence against one address filling the table) is lifted, the benchmarks measure sessions.
    http = ["--max-sessions-per-client", "1000000"]

    def script(name: str) -> list[str]:
        return [python, f"benchmarks/peers/{name}.py"]

    def client(kind: str) -> list[str]:
        return [python, "-m", "benchmarks.sdk_clients", kind]

    return {
        "ours": Peer(
            "ours",
            "mcp-trio",
            ours + [],
            lambda port: ours + ["--http", f"{HOST}:{port}", *http],
            own_client=client("ours"),
        ),
        "ours_lowlevel": Peer(
            "ours_lowlevel",
            "mcp-trio low-level session (no Server)",
            [python, "benchmarks/echo_lowlevel.py"],
        ),
        "ours_httptools": Peer(
            "ours_httptools",
            "mcp-trio (httptools front door)",
            None,
            lambda port: ours + ["--http", f"{HOST}:{port}", "--front-door", "httptools", *http],
        ),
        "ours_hypercorn": Peer(
            "ours_hypercorn",
            "mcp-trio (hypercorn front door)",
            None,
            lambda port: ours + ["--http", f"{HOST}:{port}", "--front-door", "hypercorn", *http],
        ),
        "sdk": Peer(
            "sdk",
            "SDK low-level",
            script("sdk_lowlevel") + ["stdio"],
            lambda port: script("sdk_lowlevel") + ["http", str(port), "--json"],
            own_client=client("sdk"),
        ),
        "sdk_sse": Peer(
            "sdk_sse",
            "SDK low-level (SSE)",
            None,
            lambda port: script("sdk_lowlevel") + ["http", str(port)],
        ),
        "sdk_high": Peer(
            "sdk_high",
            "SDK MCPServer",
            script("sdk_highlevel") + ["stdio"],
            lambda port: script("sdk_highlevel") + ["http", str(port), "--json"],
        ),
        "fastmcp": Peer(
            "fastmcp",
            "FastMCP",
            script("fastmcp_server") + ["stdio"],
            lambda port: script("fastmcp_server") + ["http", str(port), "--json"],
            own_client=client("fastmcp"),
        ),
        "ts": Peer(
            "ts",
            "TypeScript SDK low-level",
            ts.argv("stdio") if ts else None,
            (lambda port: ts.argv("http", str(port))) if ts else None,
            own_client=ts.client_argv() if ts else None,
        ),
        "raw_trio": Peer(
            "raw_trio",
            "raw trio line echo (ceiling)",
            script("raw_trio_echo") + ["stdio"],
            None,
            check="id",
        ),
        "trivial_h11": Peer(
            "trivial_h11",
            "trivial JSON on bare h11/trio (ceiling)",
            None,
            lambda port: script("trivial_h11") + ["http", str(port)],
        ),
        "trivial_httptools": Peer(
            "trivial_httptools",
            "trivial JSON on bare httptools/trio (ceiling)",
            None,
            lambda port: script("trivial_httptools") + ["http", str(port)],
        ),
        "trivial_node": Peer(
            "trivial_node",
            "trivial JSON on bare node:http (harness check)",
            None,
            (lambda port: [str(ts.node), TRIVIAL_NODE, "http", str(port)]) if ts else None,
        ),
        "trivial_hypercorn": Peer(
            "trivial_hypercorn",
            "trivial JSON on hypercorn (ceiling)",
            None,
            lambda port: script("trivial_hypercorn") + ["http", str(port)],
        ),
    }


def available(keys: Sequence[str], table: dict[str, Peer], transport: str) -> list[str]:
    """The ``keys`` whose server has a command for ``transport`` (``stdio`` or ``http``)."""
    return [k for k in keys if getattr(table[k], transport) is not None]


#: Where the servers' stderr goes (next to the benchmark environment).
LOGS = DEFAULT_VENV.parent / "logs"


def _server_log(name: str) -> Any:
    LOGS.mkdir(parents=True, exist_ok=True)
    return open(LOGS / f"{name}.log", "wb")  # noqa: SIM115 - closed by the caller's stack


@contextmanager
def stdio_servers(keys: Sequence[str], table: dict[str, Peer]) -> Iterator[dict[str, Any]]:
    from benchmarks import loadgen

    with ExitStack() as stack:
        servers = {}
        for key in keys:
            errlog = stack.enter_context(_server_log(f"stdio-{key}"))
            server = loadgen.StdioServer(table[key].stdio or [], cwd=str(ROOT), stderr=errlog)
            stack.callback(server.close)
            servers[key] = server
        for key, server in servers.items():
            if table[key].check == "echo":
                server.initialize()
        yield servers


@contextmanager
def http_servers(keys: Sequence[str], table: dict[str, Peer]) -> Iterator[dict[str, Any]]:
    from benchmarks import loadgen

    with ExitStack() as stack:
        targets: dict[str, Any] = {}
        processes = {}
        for key in keys:
            port = loadgen.free_port(HOST)
            argv = table[key].http(port)  # type: ignore[misc]
            errlog = stack.enter_context(_server_log(f"http-{key}"))
            process = subprocess.Popen(
                argv, cwd=str(ROOT), stdin=subprocess.DEVNULL, stdout=errlog, stderr=errlog
            )
            stack.callback(_stop, process)
            processes[key] = process
            targets[key] = loadgen.HttpTarget(HOST, port)
        for key, target in targets.items():
            process = processes[key]
            loadgen.wait_for_port(HOST, target.port, 60, lambda p=process: p.poll() is None)
            targets[key] = (target, process.pid)
        yield targets


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
