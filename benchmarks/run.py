"""Run the benchmark suite: mcp-trio against the official Python SDK and FastMCP.

Usage (from the project root)::

    python3 -m benchmarks.run            # quick mode (under two minutes once installed)
    python3 -m benchmarks.run --full     # longer runs, every peer in every workload

It creates (once) a virtual environment with the pinned peers of
``benchmarks/requirements.txt`` and this checkout (editable), by default in
``~/.cache/mcp-trio-bench/venv`` (``--venv`` or ``$MCP_TRIO_BENCH_VENV`` to
change it), re-runs itself inside it, starts every server, measures, and
writes ``benchmarks/RESULTS.md``, ``benchmarks/ratios.png`` and the raw
figures in ``benchmarks/results.json``.

Every figure is the median of ``repeats`` runs; the servers of a workload
run side by side and the repeats go round them in turn, so a change in the
machine's load hits them all alike.  Ratios compare figures of the same run.
The load generator (``loadgen.py``) speaks raw JSON-RPC to every server.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_VENV = Path.home() / ".cache" / "mcp-trio-bench" / "venv"
REQUIREMENTS = HERE / "requirements.txt"
RESULTS_MD = HERE / "RESULTS.md"
RESULTS_JSON = HERE / "results.json"
CHART = HERE / "ratios.png"
ANALYSIS_MARKER = (
    "<!-- Everything below this line is written by hand and kept by benchmarks/run.py. -->"
)
HOST = "127.0.0.1"


# --------------------------------------------------------------- environment


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _install_stamp() -> str:
    digest = hashlib.sha256()
    for path in (REQUIREMENTS, ROOT / "pyproject.toml"):
        digest.update(path.read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def ensure_venv(venv: Path) -> Path:
    """Create or update the benchmark environment; returns its python."""
    python = _venv_python(venv)
    stamp_file = venv / ".mcp-trio-bench-stamp"
    stamp = _install_stamp()
    if python.exists() and stamp_file.exists() and stamp_file.read_text() == stamp:
        return python
    print(f"benchmarks: installing the peers into {venv} (once) ...", flush=True)
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS), "-e", str(ROOT)],
        check=True,
    )
    stamp_file.write_text(stamp)
    return python


def _in_venv(venv: Path) -> bool:
    return Path(sys.prefix).resolve() == venv.resolve()


# ------------------------------------------------------------------- config


@dataclass(frozen=True)
class Mode:
    name: str
    repeats: int
    duration: float  # seconds per throughput run
    http_duration: float
    big_duration: float
    cold_repeats: int
    sessions: int
    full: bool


QUICK = Mode(
    "quick",
    repeats=3,
    duration=0.5,
    http_duration=0.5,
    big_duration=0.4,
    cold_repeats=3,
    sessions=1000,
    full=False,
)
FULL = Mode(
    "full",
    repeats=5,
    duration=2.0,
    http_duration=2.0,
    big_duration=1.5,
    cold_repeats=7,
    sessions=1000,
    full=True,
)

PIPELINE_DEPTH = 256
HTTP_CLIENTS = 64
BIG_TEXT = "".join(chr(0x61 + (i * 7) % 26) for i in range(1 << 20))  # 1 MiB of ASCII


@dataclass(frozen=True)
class Peer:
    key: str
    label: str
    stdio: list[str] | None
    http: Callable[[int], list[str]] | None = None
    check: str = "echo"


def peers(python: str) -> dict[str, Peer]:
    bindir = str(Path(python).parent)
    ours = [f"{bindir}/mcp-trio", "serve", "benchmarks/echo_server.py"]

    def script(name: str) -> list[str]:
        return [python, f"benchmarks/peers/{name}.py"]

    return {
        "ours": Peer(
            "ours", "mcp-trio", ours + [], lambda port: ours + ["--http", f"{HOST}:{port}"]
        ),
        "ours_lowlevel": Peer(
            "ours_lowlevel",
            "mcp-trio low-level session (no Server)",
            [python, "benchmarks/echo_lowlevel.py"],
        ),
        "ours_hypercorn": Peer(
            "ours_hypercorn",
            "mcp-trio (hypercorn front door)",
            None,
            lambda port: ours + ["--http", f"{HOST}:{port}", "--front-door", "hypercorn"],
        ),
        "sdk": Peer(
            "sdk",
            "SDK low-level",
            script("sdk_lowlevel") + ["stdio"],
            lambda port: script("sdk_lowlevel") + ["http", str(port), "--json"],
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
        "trivial_hypercorn": Peer(
            "trivial_hypercorn",
            "trivial JSON on hypercorn (ceiling)",
            None,
            lambda port: script("trivial_hypercorn") + ["http", str(port)],
        ),
    }


# ------------------------------------------------------------------ helpers


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


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


def summarize(runs: list[Any]) -> dict[str, Any]:
    """Median rate and latencies over repeated :class:`loadgen.Measurement` runs."""
    return {
        "rate": median([r.rate for r in runs]),
        "p50_ms": median([r.p50 for r in runs]),
        "p99_ms": median([r.p99 for r in runs]),
        "runs": [round(r.rate, 1) for r in runs],
    }


def rounds(keys: Sequence[str], repeats: int) -> Iterator[str]:
    """Each key once per repeat, in turn (interleaved, so load drift hits everyone)."""
    for _ in range(repeats):
        yield from keys


# ---------------------------------------------------------------- workloads


def run_codec(python: str, mode: Mode) -> dict[str, Any]:
    argv = [python, "-m", "benchmarks.wire_codec", "--json"] + (
        ["--quick"] if not mode.full else []
    )
    out = subprocess.run(argv, cwd=str(ROOT), check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def run_stdio(table: dict[str, Peer], mode: Mode) -> dict[str, Any]:
    from benchmarks import loadgen

    seq_keys = ["ours", "ours_lowlevel", "sdk", "sdk_high", "fastmcp", "raw_trio"]
    pipe_keys = seq_keys if mode.full else ["ours", "ours_lowlevel", "sdk", "fastmcp", "raw_trio"]
    big_keys = ["ours", "sdk", "sdk_high", "fastmcp"] if mode.full else ["ours", "sdk"]
    out: dict[str, Any] = {"sequential": {}, "pipelined": {}, "payload_1mib": {}}
    with stdio_servers(seq_keys, table) as servers:
        runs: dict[str, list[Any]] = {k: [] for k in seq_keys}
        for key in rounds(seq_keys, mode.repeats):
            runs[key].append(
                loadgen.stdio_sequential(servers[key], mode.duration, check=table[key].check)
            )
        out["sequential"] = {k: summarize(v) for k, v in runs.items()}
        log(f"  stdio sequential: { {k: round(v['rate']) for k, v in out['sequential'].items()} }")
        runs = {k: [] for k in pipe_keys}
        for key in rounds(pipe_keys, mode.repeats):
            runs[key].append(
                loadgen.stdio_pipelined(
                    servers[key], mode.duration, depth=PIPELINE_DEPTH, check=table[key].check
                )
            )
        out["pipelined"] = {k: summarize(v) for k, v in runs.items()}
        log(f"  stdio pipelined: { {k: round(v['rate']) for k, v in out['pipelined'].items()} }")
        runs = {k: [] for k in big_keys}
        for key in rounds(big_keys, mode.repeats):
            runs[key].append(
                loadgen.stdio_sequential(servers[key], mode.big_duration, text=BIG_TEXT, warmup=0.0)
            )
        out["payload_1mib"] = {k: summarize(v) for k, v in runs.items()}
        log(f"  stdio 1 MiB: { {k: round(v['rate'], 1) for k, v in out['payload_1mib'].items()} }")
    return out


def run_http(table: dict[str, Peer], mode: Mode) -> dict[str, Any]:
    from benchmarks import loadgen

    keys = ["ours", "ours_hypercorn", "sdk", "sdk_sse", "trivial_h11", "trivial_hypercorn"]
    if mode.full:
        keys += ["fastmcp", "sdk_high"]
    seq_keys = keys if mode.full else ["ours", "sdk", "trivial_h11"]
    out: dict[str, Any] = {}
    with http_servers(keys, table) as servers:
        runs: dict[str, list[Any]] = {k: [] for k in seq_keys}
        for key in rounds(seq_keys, mode.repeats):
            runs[key].append(loadgen.http_calls(servers[key][0], mode.http_duration, clients=1))
        out["sequential"] = {k: summarize(v) for k, v in runs.items()}
        log(f"  HTTP sequential: { {k: round(v['rate']) for k, v in out['sequential'].items()} }")
        runs = {k: [] for k in keys}
        for key in rounds(keys, mode.repeats):
            runs[key].append(
                loadgen.http_calls(servers[key][0], mode.http_duration, clients=HTTP_CLIENTS)
            )
        out["concurrent"] = {k: summarize(v) for k, v in runs.items()}
        log(
            f"  HTTP x{HTTP_CLIENTS}: "
            f"{ {k: round(v['rate']) for k, v in out['concurrent'].items()} }"
        )
    return out


def run_memory(table: dict[str, Peer], mode: Mode) -> dict[str, Any]:
    """RSS growth of the server process per idle session, over ``mode.sessions`` sessions."""
    from benchmarks import loadgen

    keys = ["ours", "sdk"] + (
        ["sdk_sse", "sdk_high", "fastmcp", "ours_hypercorn"] if mode.full else []
    )
    out: dict[str, Any] = {}
    with http_servers(keys, table) as servers:
        for key in keys:
            target, pid = servers[key]
            loadgen.open_idle_sessions(target, 50)  # warm up: imports, caches, first arenas
            time.sleep(0.3)
            before = loadgen.rss_bytes(pid)
            opened = loadgen.open_idle_sessions(target, mode.sessions)
            time.sleep(0.5)
            after = loadgen.rss_bytes(pid)
            out[key] = {
                "kib_per_session": (after - before) / opened / 1024,
                "rss_before_mib": before / 2**20,
                "rss_after_mib": after / 2**20,
                "sessions": opened,
            }
    log(f"  memory KiB/session: { {k: round(v['kib_per_session'], 1) for k, v in out.items()} }")
    return out


def run_cold_start(python: str, table: dict[str, Peer], mode: Mode) -> dict[str, Any]:
    from benchmarks import loadgen

    keys = ["ours", "sdk"] + (["fastmcp", "sdk_high"] if mode.full else [])
    samples: dict[str, list[float]] = {k: [] for k in keys}
    for key in rounds(keys, mode.cold_repeats):
        samples[key].append(loadgen.cold_start(table[key].stdio or [], cwd=str(ROOT)))
    cold = {k: {"seconds": median(v), "runs": [round(x, 3) for x in v]} for k, v in samples.items()}
    modules = {
        "python (no import)": "pass",
        "mcp_trio.server": "import mcp_trio.server",
        "mcp.server.lowlevel": "import mcp.server.lowlevel",
    }
    if mode.full:
        modules["trio"] = "import trio"
        modules["mcp.server.mcpserver"] = "import mcp.server.mcpserver"
        modules["fastmcp"] = "import fastmcp"
    times: dict[str, list[float]] = {k: [] for k in modules}
    for key in rounds(list(modules), mode.cold_repeats):
        start = time.perf_counter()
        subprocess.run([python, "-c", modules[key]], check=True, cwd=str(ROOT))
        times[key].append(time.perf_counter() - start)
    imports = {
        k: {"seconds": median(v), "runs": [round(x, 3) for x in v]} for k, v in times.items()
    }
    log(f"  cold start s: { {k: round(v['seconds'], 3) for k, v in cold.items()} }")
    log(f"  import s: { {k: round(v['seconds'], 3) for k, v in imports.items()} }")
    return {"cold_start": cold, "import": imports}


def run_own_clients(python: str, table: dict[str, Peer], mode: Mode) -> dict[str, Any]:
    """Each implementation's client against its own server (sequential calls)."""
    pairs = {"ours": "ours", "sdk": "sdk", "fastmcp": "fastmcp"}
    transports = ["stdio", "http"] if mode.full else ["stdio"]
    out: dict[str, Any] = {t: {} for t in transports}
    duration = str(mode.duration)
    for transport in transports:
        samples: dict[str, list[dict[str, float]]] = {k: [] for k in pairs}
        with ExitStack() as stack:
            targets: dict[str, list[str]] = {}
            if transport == "http":
                servers = stack.enter_context(http_servers(list(pairs.values()), table))
                targets = {k: [servers[pairs[k]][0].url] for k in pairs}
            else:
                targets = {k: ["--", *(table[pairs[k]].stdio or [])] for k in pairs}
            for key in rounds(list(pairs), max(1, mode.repeats - (0 if mode.full else 2))):
                argv = [
                    python,
                    "-m",
                    "benchmarks.sdk_clients",
                    key,
                    transport,
                    duration,
                    *targets[key],
                ]
                result = subprocess.run(
                    argv, cwd=str(ROOT), check=True, capture_output=True, text=True, timeout=120
                )
                samples[key].append(json.loads(result.stdout.strip().splitlines()[-1]))
        out[transport] = {
            k: {
                "rate": median([s["calls"] / s["elapsed"] for s in v]),
                "p50_ms": median([s["p50_ms"] for s in v]),
                "p99_ms": median([s["p99_ms"] for s in v]),
            }
            for k, v in samples.items()
        }
        log(
            f"  own clients {transport}: "
            f"{ {k: round(v['rate']) for k, v in out[transport].items()} }"
        )
    return out


# ------------------------------------------------------------------ targets


@dataclass
class Target:
    name: str
    wanted: str
    value: float | None
    goal: float
    higher_is_better: bool = True

    @property
    def met(self) -> bool | None:
        if self.value is None or math.isnan(self.value):
            return None
        return self.value >= self.goal if self.higher_is_better else self.value <= self.goal


def _get(results: dict[str, Any], *path: str) -> Any:
    value: Any = results
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0 or math.isnan(a) or math.isnan(b):
        return None
    return a / b


def targets(results: dict[str, Any]) -> list[Target]:
    r = results
    seq = lambda k: _get(r, "stdio", "sequential", k, "rate")  # noqa: E731
    pipe = lambda k: _get(r, "stdio", "pipelined", k, "rate")  # noqa: E731
    conc = lambda k, f="rate": _get(r, "http", "concurrent", k, f)  # noqa: E731
    sdk_modes = [k for k in ("sdk", "sdk_sse") if conc(k) is not None]
    best_sdk = max(sdk_modes, key=lambda k: conc(k)) if sdk_modes else None
    mem = lambda k: _get(r, "memory", k, "kib_per_session")  # noqa: E731
    cold = lambda k: _get(r, "startup", "cold_start", k, "seconds")  # noqa: E731
    return [
        Target("stdio sequential vs SDK low-level", "≥ 10×", _ratio(seq("ours"), seq("sdk")), 10),
        Target(
            "stdio sequential vs raw trio line echo",
            "≥ 0.5×",
            _ratio(seq("ours"), seq("raw_trio")),
            0.5,
        ),
        Target(
            "stdio pipelined (256 in flight) vs SDK low-level",
            "≥ 20×",
            _ratio(pipe("ours"), pipe("sdk")),
            20,
        ),
        Target(
            f"HTTP ×64, h11 front door vs SDK best mode ({best_sdk})",
            "≥ 2×",
            _ratio(conc("ours"), conc(best_sdk) if best_sdk else None),
            2,
        ),
        Target(
            "HTTP ×64, h11 front door vs bare h11-over-trio",
            "≥ 0.8×",
            _ratio(conc("ours"), conc("trivial_h11")),
            0.8,
        ),
        Target(
            "HTTP ×64, hypercorn front door vs trivial app on hypercorn",
            "≥ 0.9×",
            _ratio(conc("ours_hypercorn"), conc("trivial_hypercorn")),
            0.9,
        ),
        Target(
            f"HTTP ×64 p99 latency, h11 front door vs SDK ({best_sdk})",
            "≤ 0.5×",
            _ratio(conc("ours", "p99_ms"), conc(best_sdk, "p99_ms") if best_sdk else None),
            0.5,
            higher_is_better=False,
        ),
        Target(
            "memory per idle HTTP session vs SDK (JSON mode)",
            "≤ 0.25×",
            _ratio(mem("ours"), mem("sdk")),
            0.25,
            higher_is_better=False,
        ),
        Target("cold start, SDK low-level / ours", "≥ 4×", _ratio(cold("sdk"), cold("ours")), 4),
        Target(
            "codec, full wire path vs SDK (geometric mean)",
            "≥ 10×",
            _get(r, "codec", "geomean_ratio"),
            10,
        ),
    ]


# ------------------------------------------------------------------- report


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cores": os.cpu_count(),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["memory_gib"] = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return info


def versions() -> dict[str, str]:
    from importlib import metadata

    found = {}
    for name in (
        "mcp-trio",
        "mcp",
        "fastmcp",
        "trio",
        "msgspec",
        "h11",
        "hypercorn",
        "anyio",
        "pydantic",
        "uvicorn",
        "starlette",
    ):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def _fmt(value: Any, digits: int = 0) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def _x(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}×"


def render_markdown(results: dict[str, Any], table: dict[str, Peer]) -> str:
    meta = results["meta"]
    label = {k: p.label for k, p in table.items()}
    lines = [
        "# Benchmark results",
        "",
        f"Written by `python -m benchmarks.run{' --full' if meta['mode'] == 'full' else ''}` on "
        f"{meta['date']} ({meta['mode']} mode: every figure is the median of {meta['repeats']} "
        f"runs of {meta['duration']} s; cold starts and imports of {meta['cold_repeats']}). "
        "Ratios compare figures of this same run.",
        "",
        f"- Machine: {meta['machine'].get('cpu', '?')}, {meta['machine']['cores']} cores, "
        f"{meta['machine'].get('memory_gib', '?')} GiB; {meta['machine']['platform']}; "
        f"Python {meta['machine']['python']}. The load generator runs on the same machine.",
        f"- Load average (1, 5, 15 min) before: {meta['load_before']}, after: {meta['load_after']}"
        " (other work on the machine, e.g. test suites, shares the two cores).",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()),
        f"- Took {meta['elapsed_s']:.0f} s.",
        "",
        "## Targets",
        "",
        "| target | wanted | measured | |",
        "|---|---|---|---|",
    ]
    for target in targets(results):
        mark = {True: "met", False: "**missed**", None: "not measured"}[target.met]
        lines.append(f"| {target.name} | {target.wanted} | {_x(target.value)} | {mark} |")
    lines += ["", "![ratios](ratios.png)", ""]

    def throughput_table(
        title: str, data: dict[str, Any] | None, unit: str, note: str = ""
    ) -> None:
        if not data:
            return
        lines.extend([f"## {title}", ""])
        if note:
            lines.extend([note, ""])
        lines.append(f"| server | {unit} | p50 ms | p99 ms | runs |")
        lines.append("|---|---:|---:|---:|---|")
        for key, row in data.items():
            digits = 1 if row["rate"] < 100 else 0
            lines.append(
                f"| {label.get(key, key)} | {_fmt(row['rate'], digits)} | {_fmt(row['p50_ms'], 2)} "
                f"| {_fmt(row['p99_ms'], 2)} "
                f"| {', '.join(_fmt(x, digits) for x in row.get('runs', []))} |"
            )
        lines.append("")

    stdio = results.get("stdio") or {}
    throughput_table(
        "stdio, sequential tools/call",
        stdio.get("sequential"),
        "calls/s",
        'One `tools/call` of `echo("hello")` at a time, answer checked.',
    )
    throughput_table(
        f"stdio, pipelined ({PIPELINE_DEPTH} in flight)",
        stdio.get("pipelined"),
        "calls/s",
        "Latency here is mostly queueing.",
    )
    throughput_table(
        "stdio, 1 MiB payload",
        stdio.get("payload_1mib"),
        "calls/s",
        "`echo` of 1 MiB of text and back, one at a time.",
    )
    http = results.get("http") or {}
    throughput_table(
        "Streamable HTTP, one client",
        http.get("sequential"),
        "req/s",
        "One session, keep-alive, one `tools/call` at a time.",
    )
    throughput_table(
        f"Streamable HTTP, {HTTP_CLIENTS} concurrent clients",
        http.get("concurrent"),
        "req/s",
        f"{HTTP_CLIENTS} clients, each with its own session and connection, "
        "calling back to back. SDK servers run on uvicorn (its default server) in "
        "JSON mode unless marked SSE.",
    )

    memory = results.get("memory")
    if memory:
        lines += [
            "## Memory per idle HTTP session",
            "",
            "RSS of the server process before and after opening "
            f"{memory[next(iter(memory))]['sessions']} "
            "sessions (initialize + initialized, then idle), divided by the count.",
            "",
            "| server | KiB per session | RSS before MiB | RSS after MiB |",
            "|---|---:|---:|---:|",
        ]
        for key, row in memory.items():
            lines.append(
                f"| {label.get(key, key)} | {_fmt(row['kib_per_session'], 1)} | "
                f"{_fmt(row['rss_before_mib'], 1)} | {_fmt(row['rss_after_mib'], 1)} |"
            )
        lines.append("")

    startup = results.get("startup")
    if startup:
        lines += [
            "## Cold start and import time",
            "",
            "Cold start: spawn of the stdio server until its `initialize` answer arrives. "
            'Import: wall time of `python -c "import X"` (the interpreter\'s own start '
            "included; see the first row).",
            "",
            "| server | cold start s | runs |",
            "|---|---:|---|",
        ]
        for key, row in startup["cold_start"].items():
            lines.append(
                f"| {label.get(key, key)} | {_fmt(row['seconds'], 3)} | "
                f"{', '.join(_fmt(x, 3) for x in row['runs'])} |"
            )
        lines += ["", "| import | s | runs |", "|---|---:|---|"]
        for key, row in startup["import"].items():
            lines.append(
                f"| `{key}` | {_fmt(row['seconds'], 3)} | "
                f"{', '.join(_fmt(x, 3) for x in row['runs'])} |"
            )
        lines.append("")

    codec = results.get("codec")
    if codec:
        lines += [
            "## Codec: full wire path",
            "",
            "Decode = parse the JSON-RPC envelope and validate the payload into typed objects; "
            "encode = typed object to JSON-RPC bytes (see `wire_codec.py`). Microseconds per "
            "message, decode + encode.",
            "",
            "| revision | message | bytes | ours µs | SDK µs | SDK / ours |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for row in codec["rows"]:
            lines.append(
                f"| {row['revision']} | {row['message']} | {row['size']} | "
                f"{_fmt(row['ours_us'], 1)} | {_fmt(row['sdk_us'], 1)} | "
                f"{_fmt(row['ratio'], 1)} |"
            )
        lines += [
            "",
            f"Geometric mean of the ratios: {codec['geomean_ratio']:.1f}×; lowest "
            f"{codec['min_ratio']:.1f}× ({codec['compared']} messages the SDK models).",
            "",
        ]

    own = results.get("own_clients")
    if own:
        lines += [
            "## Each implementation's own client against its own server",
            "",
            "Sequential `tools/call` through the client library users would use: "
            "`mcp_trio.client`, the SDK's `mcp.Client` (handshake mode), `fastmcp.Client`.",
            "",
            "| transport | client → server | calls/s | p50 ms | p99 ms |",
            "|---|---|---:|---:|---:|",
        ]
        names = {
            "ours": "mcp-trio → mcp-trio",
            "sdk": "SDK → SDK low-level",
            "fastmcp": "FastMCP → FastMCP",
        }
        for transport, rows in own.items():
            for key, row in rows.items():
                lines.append(
                    f"| {transport} | {names[key]} | {_fmt(row['rate'])} | "
                    f"{_fmt(row['p50_ms'], 2)} | {_fmt(row['p99_ms'], 2)} |"
                )
        lines.append("")

    errors = results.get("errors")
    if errors:
        lines += ["## Workloads that failed", ""]
        lines += [f"- {name}: `{message}`" for name, message in errors.items()]
        lines.append("")
    return "\n".join(lines)


def write_chart(results: dict[str, Any], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = [t for t in targets(results) if t.value is not None]
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(11, 0.55 * len(rows) + 1.5))
    names = [t.name + ("" if t.higher_is_better else " (lower is better)") for t in rows][::-1]
    values = [t.value for t in rows][::-1]
    goals = [t.goal for t in rows][::-1]
    colors = ["#2e7d32" if t.met else "#c62828" for t in rows][::-1]
    ax.barh(names, values, color=colors)
    for i, (value, goal) in enumerate(zip(values, goals, strict=True)):
        ax.plot([goal, goal], [i - 0.4, i + 0.4], color="black", linewidth=2)
        ax.text(
            value * 1.04,
            i,
            f"{value:.2f}×",
            va="center",
            fontsize=8,
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 1},
        )
    ax.set_xscale("log")
    ax.set_xlabel("ratio (log scale); black tick = target; green = met, red = missed")
    ax.set_title(f"mcp-trio ratios, {results['meta']['date']} ({results['meta']['mode']} mode)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _kept_analysis() -> str:
    if not RESULTS_MD.exists():
        return ""
    text = RESULTS_MD.read_text()
    index = text.find(ANALYSIS_MARKER)
    return "" if index < 0 else text[index + len(ANALYSIS_MARKER) :].strip("\n")


# --------------------------------------------------------------------- main


def run_suite(python: str, mode: Mode, only: set[str] | None) -> dict[str, Any]:
    table = peers(python)
    started = time.perf_counter()
    results: dict[str, Any] = {
        "meta": {
            "mode": mode.name,
            "repeats": mode.repeats,
            "duration": mode.duration,
            "cold_repeats": mode.cold_repeats,
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": machine(),
            "versions": versions(),
            "load_before": loadavg(),
        },
        "errors": {},
    }
    workloads: list[tuple[str, Callable[[], Any]]] = [
        ("startup", lambda: run_cold_start(python, table, mode)),
        ("codec", lambda: run_codec(python, mode)),
        ("stdio", lambda: run_stdio(table, mode)),
        ("http", lambda: run_http(table, mode)),
        ("memory", lambda: run_memory(table, mode)),
        ("own_clients", lambda: run_own_clients(python, table, mode)),
    ]
    for name, workload in workloads:
        if only and name not in only:
            continue
        log(f"{name} ...")
        try:
            results[name] = workload()
        except Exception as exc:  # noqa: BLE001 - record it, go on with the others
            traceback.print_exc()
            results["errors"][name] = f"{type(exc).__name__}: {exc}"
    results["meta"]["load_after"] = loadavg()
    results["meta"]["elapsed_s"] = time.perf_counter() - started
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true", help="the default: short runs (< 2 min)")
    group.add_argument("--full", action="store_true", help="longer runs, every peer (< 15 min)")
    parser.add_argument(
        "--venv",
        type=Path,
        default=Path(os.environ.get("MCP_TRIO_BENCH_VENV", DEFAULT_VENV)),
        help=f"the benchmark environment (default {DEFAULT_VENV})",
    )
    parser.add_argument(
        "--only", help="comma-separated workloads: startup, codec, stdio, http, memory, own_clients"
    )
    parser.add_argument("--no-write", action="store_true", help="print, do not write the report")
    parser.add_argument(
        "--from-json",
        action="store_true",
        help="measure nothing: rewrite RESULTS.md and ratios.png from results.json",
    )
    args = parser.parse_args(argv)
    venv = args.venv.expanduser().resolve()
    global LOGS
    LOGS = venv.parent / "logs"
    if not _in_venv(venv):
        python = ensure_venv(venv)
        os.chdir(ROOT)
        forwarded = list(sys.argv[1:] if argv is None else argv)
        os.execv(str(python), [str(python), "-m", "benchmarks.run", *forwarded])
    os.chdir(ROOT)
    if args.from_json:
        results = json.loads(RESULTS_JSON.read_text())
    else:
        mode = FULL if args.full else QUICK
        only = set(args.only.split(",")) if args.only else None
        log(f"mode {mode.name}; python {sys.executable}; load {loadavg()}")
        results = run_suite(sys.executable, mode, only)
        if args.no_write:
            print(json.dumps(results, indent=1, default=str))
            return 0
        RESULTS_JSON.write_text(json.dumps(results, indent=1, default=str) + "\n")
    report = render_markdown(results, peers(sys.executable))
    kept = _kept_analysis()
    RESULTS_MD.write_text(report + "\n" + ANALYSIS_MARKER + "\n\n" + kept + ("\n" if kept else ""))
    charted = write_chart(results, CHART)
    log(
        f"wrote {RESULTS_MD.relative_to(ROOT)}"
        + (f" and {CHART.relative_to(ROOT)}" if charted else "")
    )
    for target in targets(results):
        mark = {True: "met", False: "MISSED", None: "not measured"}[target.met]
        print(f"  {mark:>12}  {target.name}: {_x(target.value)} (wanted {target.wanted})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
