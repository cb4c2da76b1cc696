"""mcp-trio serve --workers N (worker processes sharing one port, under a supervisor)

``mcp-trio serve --http HOST:PORT --workers N`` runs N worker processes serving one port under a
small supervisor that restarts a worker that dies and stops them all on SIGINT / SIGTERM.

How the port is shared: every worker opens its own listening socket on the same address with
``SO_REUSEPORT`` (:func:`mcp_trio.transports.http.doors._gate.open_listeners`), and the kernel spreads
new connections among the workers listening (by a hash of the connection's addresses), with no
process waking for a connection another one takes.  The supervisor binds first, with
``SO_REUSEPORT`` too but without listening: that learns the port when it is 0 (the workers are
then given the real port) and holds it for the supervisor's life, so a worker restarted later
always gets the same port back; a socket that does not listen is never given a connection.  The
other design, one socket bound by the supervisor and inherited by the workers, shares one accept
queue: every worker wakes for each connection, and the busiest tends to lose the race rather
than the kernel balancing; and neither front door takes a socket from outside.  What
``SO_REUSEPORT`` costs: the connections waiting in a dying worker's own backlog (accepted by
the kernel, not yet by the worker) are reset; clients retry.

The workers are ``python -m mcp_trio._cli serve ... --workers 1 --worker-of INDEX:FD``
(``--worker-of`` is internal, hidden from ``--help``): the supervisor's resolved flags (from
the command line, the environment and ``--config``) are passed on explicitly; ``FD`` is one
end of a socket pair on which the worker says ``ready URL...`` once it listens, and reads the
supervisor's end of file if the supervisor goes away (it then stops gracefully, as on
SIGTERM).  The workers run in their own process group, so that a Ctrl-C in a terminal reaches
them once, through the supervisor, which forwards every SIGINT / SIGTERM it gets: the first
one stops them gracefully (``--grace-period``), a second one at once.

Each worker has an id, ``HOST:PID`` (:func:`worker_id`), for the store's bus.  The session
store is opened in :func:`open_store_options`, the one place where ``--store`` becomes what
``serve_http`` takes.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import trio

from ._config import ConfigError, as_argv
from ._tuning import allocator_environment

__all__ = [
    "add_worker_arguments",
    "check_workers",
    "open_store_options",
    "supervise",
    "wants_supervisor",
    "worker_id",
    "worker_serving",
]

#: The schemes --store takes (memory: the default, in-process store).
log = logging.getLogger("mcp_trio.serve")
STATE_KEY_VARIABLE = "MCP_TRIO_STATE_KEY"
STORE_VARIABLE = "MCP_TRIO_STORE"
METRICS_TOKEN_VARIABLE = "MCP_TRIO_METRICS_TOKEN"
STORE_SCHEMES = ("memory", "redis", "rediss")
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: The restart backoff: the first restart after _BACKOFF_FIRST seconds, doubling for each worker
#: death in a row up to _BACKOFF_MAX; a worker that served _BACKOFF_RESET seconds starts over.
_BACKOFF_FIRST = 0.1
_BACKOFF_MAX = 5.0
_BACKOFF_RESET = 30.0
#: Bytes of a worker's "ready URL..." line at most.
_READY_LIMIT = 4096
#: After the grace period, how long a worker still gets to exit before it is killed.
_KILL_AFTER = 5.0


def add_worker_arguments(p: Any) -> None:
    """``--workers``, ``--store`` and the internal ``--worker-of`` of ``serve``."""
    p.add_argument(
        "--workers",
        type=_positive_int,
        default=1,
        metavar="N",
        help="with --http, serve from N processes sharing the port (SO_REUSEPORT) under a supervisor "
        "that restarts a worker that dies (default: 1, no supervisor); N > 1 needs --store for "
        "sessions, or --stateless",
    )
    p.add_argument(
        "--store",
        metavar="URL",
        help="with --http, where sessions, resumable streams and tasks are kept: 'memory' (default: "
        "this process only) or redis://HOST[:PORT][/DB] (rediss:// for TLS), shared by every "
        "worker and host given the same URL",
    )
    p.add_argument(
        "--state-key",
        metavar="SECRET",
        help="the key (at least 16 characters) that signs 2026-07-28 multi-round-trip request "
        "state: every process serving one endpoint must have the same (give it as "
        "MCP_TRIO_STATE_KEY rather than on the command line); default: one drawn by the process, "
        "or by the supervisor for all its workers",
    )
    p.add_argument("--worker-of", metavar="INDEX:FD", help=argparse.SUPPRESS)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def store_url(text: str | None) -> str:
    """``--store``'s value, checked: ``memory`` (the default, also ``memory://``) or a
    ``redis://`` / ``rediss://`` URL with a host.

    Raises:
        ConfigError: another scheme, no host or a bad port.
    """
    if text is None:
        return "memory"
    parts = urlsplit(text)
    scheme = parts.scheme.lower() if "://" in text else text.lower()
    if scheme not in STORE_SCHEMES:
        raise ConfigError(
            f"--store: unknown store {text!r}: use memory, redis://HOST[:PORT][/DB] or rediss://HOST[:PORT][/DB]"
        )
    if scheme == "memory":
        return "memory"
    if not parts.hostname:
        raise ConfigError(f"--store: {text!r} names no host: use {scheme}://HOST[:PORT][/DB]")
    try:
        parts.port  # noqa: B018 (a bad port raises here)
    except ValueError:
        raise ConfigError(f"--store: {text!r} has a bad port") from None
    return text


def _shared_store(args: argparse.Namespace) -> bool:
    return store_url(args.store) != "memory"


def wants_supervisor(args: argparse.Namespace) -> bool:
    """Whether this ``serve`` is a supervisor of workers (``--workers N``, N > 1, not a worker)."""
    return bool(args.workers > 1 and args.worker_of is None)


def check_workers(args: argparse.Namespace) -> None:
    """Refuse what several workers cannot do (before anything starts).

    Raises:
        ConfigError: with the reason and what to give instead.
    """
    if _shared_store(args):
        _check_store_support(args.store)
    if args.workers == 1 or args.worker_of is not None:
        return
    if args.http is None:
        raise ConfigError("--workers needs --http HOST:PORT (stdio and --ws serve from one process)")
    if args.legacy_sse:
        raise ConfigError("--legacy-sse keeps its sessions in one process: it cannot be served by --workers")
    if not _shared_store(args) and not args.stateless:
        raise ConfigError(
            f"--workers {args.workers}: sessions opened on one worker must be found by the others, which "
            "needs a shared session store: give --store redis://HOST:PORT (or --stateless to keep no "
            "sessions)"
        )


def worker_id(args: argparse.Namespace) -> str:
    """This process's id for the store's bus: 12 random hex digits (unique among live workers,
    and a restarted worker is a new one).  It is part of the ids of the server's own requests
    and of SSE event ids, which clients see: it says nothing of the host or the process (a
    host name and a PID told an attacker how the deployment is laid out).  The log names the
    host and process of each worker id, at INFO."""
    identity = secrets.token_hex(6)
    log.info("worker %s is process %d on %s", identity, os.getpid(), socket.gethostname())
    return identity


# -------------------------------------------------------------- the store (merge point)


def _check_store_support(url: str) -> None:
    """Whether ``url`` (a shared store, checked by :func:`store_url`) can be opened here: the
    Redis store needs the ``redis`` extra."""
    if importlib.util.find_spec("coredis") is None:
        raise ConfigError(f"--store {url}: the Redis store needs coredis: pip install 'mcp-trio[redis]'")


@contextlib.asynccontextmanager
async def open_store_options(args: argparse.Namespace) -> AsyncIterator[dict[str, Any]]:
    """Open the session store ``--store`` names for this process (worker :func:`worker_id`),
    and yield what ``Server.serve_http`` takes for it, as keywords; close it on the way out.
    ``memory`` (the default) is each process's own store: nothing to pass.  A store that
    cannot be opened is an :class:`OSError` naming it (``serve`` says it cannot serve, exit 1)."""
    if not _shared_store(args):
        yield {}
        return
    from ..store import StoreError, open_store

    opened = False
    try:
        async with open_store(args.store) as store:
            opened = True
            yield {"store": store, "worker_id": worker_id(args)}
    except StoreError as exc:
        if opened:
            raise
        raise OSError(f"--store: {exc}") from None  # (the store names its URL, password masked)


# ----------------------------------------------------------------------------- the worker


def _worker_link(args: argparse.Namespace) -> tuple[int, int]:
    """``--worker-of INDEX:FD`` -> (INDEX, FD)."""
    index, _, fd = str(args.worker_of).partition(":")
    if not (index.isdigit() and fd.isdigit()):
        raise ConfigError(f"--worker-of is internal (INDEX:FD), got {args.worker_of!r}")
    return int(index), int(fd)


async def worker_serving(args: argparse.Namespace, urls: list[str], nursery: trio.Nursery) -> None:
    """In a worker, once it listens: tell the supervisor (``ready URL...``), and in ``nursery``
    watch for the supervisor going away (end of file on the link), which stops this worker as
    SIGTERM does."""
    _, fd = _worker_link(args)
    link = trio.socket.from_stdlib_socket(socket.socket(fileno=fd))
    await link.send(("ready " + " ".join(urls) + "\n").encode())

    async def lifeline() -> None:
        with link:
            while await link.recv(256):
                pass
        os.kill(os.getpid(), signal.SIGTERM)

    nursery.start_soon(lifeline)


# ------------------------------------------------------------------------- the supervisor


def _announce(line: str) -> None:
    print(f"mcp-trio serve: {line}", file=sys.stderr, flush=True)


def _hold_port(host: str, port: int) -> tuple[list[socket.socket], int]:
    """Bind (without listening) every address of ``host`` at ``port`` with SO_REUSEPORT: the
    sockets, holding the port, and the port (the one picked when ``port`` is 0)."""
    found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    held: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in found:
            sock = socket.socket(family, kind, proto)
            held.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(held) > 1:
                address = (address[0], held[0].getsockname()[1], *address[2:])
            sock.bind(address)
    except BaseException:
        for sock in held:
            sock.close()
        raise
    return held, held[0].getsockname()[1]


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"code {code} ({signal.Signals(-code).name})"
        except ValueError:
            pass
    return f"code {code}"


class _Supervisor:
    """The worker processes of one ``serve --workers N``."""

    def __init__(self, command: list[str], count: int, grace_period: float) -> None:
        self.command = command
        self.count = count
        self.grace_period = grace_period
        self.live: dict[int, trio.Process] = {}
        self.urls: list[str] = []
        self.ready = 0
        self.all_ready = trio.Event()
        self.stopping = trio.Event()
        self.first_signal: int | None = None
        self.failed: int | None = None  # the exit code of a worker that never got to serve
        self.environment: dict[str, str] | None = None  # the workers' (None: this process's)

    async def run(self) -> int:
        with trio.open_signal_receiver(*_SIGNALS) as signals:
            async with trio.open_nursery() as outer:
                outer.start_soon(self._forward, signals)
                async with trio.open_nursery() as slots:
                    for index in range(self.count):
                        slots.start_soon(self._slot, index, outer.cancel_scope)
                outer.cancel_scope.cancel()
        if self.failed is not None:
            return self.failed
        if self.first_signal is not None:
            name = signal.Signals(self.first_signal).name
            _announce(f"stopped after {name} ({self.count} workers stopped)")
        return 0

    async def _forward(self, signals: AsyncIterator[int]) -> None:
        """Every SIGINT / SIGTERM to every worker: the first one stops them gracefully."""
        async for number in signals:
            if self.first_signal is None:
                self.first_signal = number
            self.stopping.set()
            for process in list(self.live.values()):
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(number)

    async def _slot(self, index: int, everything: trio.CancelScope) -> None:
        """Worker ``index``: start it, and again each time it dies, until stopping."""
        deaths = 0
        restarted = False
        while not self.stopping.is_set():
            started = trio.current_time()
            code, served, pid = await self._run_worker(index, restarted)
            if self.stopping.is_set():
                return
            if not served and not restarted:  # it never got to serve: the command is wrong
                _announce(f"error: worker {index} (pid {pid}) exited with {_exit_text(code)} before serving")
                self.failed = code if code > 0 else 1
                self.stopping.set()
                everything.cancel()
                return
            deaths = 0 if trio.current_time() - started > _BACKOFF_RESET else deaths + 1
            delay = min(_BACKOFF_FIRST * 2 ** (deaths - 1), _BACKOFF_MAX)
            _announce(
                f"worker {index} (pid {pid}) exited with {_exit_text(code)}; restarting it in {delay:g} s"
            )
            with trio.move_on_after(delay):
                await self.stopping.wait()
            restarted = True

    async def _run_worker(self, index: int, restarted: bool) -> tuple[int, bool, int]:
        """Run worker ``index`` once: its exit code, whether it got to serve, its pid."""
        ours, theirs = socket.socketpair()
        try:
            command = [*self.command, "--worker-of", f"{index}:{theirs.fileno()}"]
            process = await trio.lowlevel.open_process(
                command,
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                process_group=0,
                env=self.environment,  # (the allocator chosen: no worker re-executes itself)
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.live[index] = process
        if self.first_signal is not None:  # (it came while the process was starting)
            process.send_signal(self.first_signal)
        served = False
        try:
            with trio.socket.from_stdlib_socket(ours) as link:  # (open: the worker's lifeline)
                urls = await _read_ready(link)
                if urls:
                    served = True
                    self._ready(index, urls, process.pid, restarted)
                code = await process.wait()
            return code, served, process.pid
        finally:
            del self.live[index]
            if process.returncode is None:  # cancelled (another worker could not start)
                with trio.CancelScope(shield=True):
                    await _stop(process, self.grace_period)

    def _ready(self, index: int, urls: list[str], pid: int, restarted: bool) -> None:
        if restarted:
            _announce(f"worker {index} restarted (pid {pid})")
            return
        self.urls = self.urls or urls
        self.ready += 1
        if self.ready == self.count:
            self.all_ready.set()


async def _read_ready(link: trio.socket.SocketType) -> list[str]:
    """The URLs of a worker's ``ready URL...`` line; [] if it ended before saying it."""
    data = b""
    while not data.endswith(b"\n") and len(data) < _READY_LIMIT:
        chunk = await link.recv(_READY_LIMIT - len(data))
        if not chunk:
            return []
        data += chunk
    words = data.decode(errors="replace").split()
    return words[1:] if words[:1] == ["ready"] else []


async def _stop(process: trio.Process, grace_period: float) -> None:
    """SIGTERM, then SIGKILL if it is still there past the grace period."""
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)
    with trio.move_on_after(grace_period + _KILL_AFTER):
        await process.wait()
        return
    process.kill()
    await process.wait()


async def _supervise(supervisor: _Supervisor, front_door: str) -> int:
    async with trio.open_nursery() as nursery:

        async def announce() -> None:
            await supervisor.all_ready.wait()
            for url in supervisor.urls:
                _announce(f"Streamable HTTP at {url} ({front_door}, {supervisor.count} workers)")

        nursery.start_soon(announce)
        code = await supervisor.run()
        nursery.cancel_scope.cancel()
    return code


def supervise(parser: argparse.ArgumentParser, args: argparse.Namespace, host: str, port: int) -> int:
    """Run ``serve --workers N`` (checked by :func:`check_workers`) on ``host:port``: the exit
    code (0 once the workers stopped after a signal)."""
    try:
        held, port = _hold_port(host, port)
    except OSError as exc:
        print(f"mcp-trio serve: error: cannot serve: {exc}", file=sys.stderr)
        return 1
    try:
        command, environment = worker_launch(parser, args, host, port)
        supervisor = _Supervisor(command, args.workers, args.grace_period)
        supervisor.environment = environment
        return trio.run(_supervise, supervisor, args.front_door)
    except KeyboardInterrupt:  # (before the signals were taken over)
        return 130
    finally:
        for sock in held:
            sock.close()


#: Settings that may hold a secret (the store's password, the state key): they go to the workers
#: in their environment, readable by the same user only, never on a command line (which any
#: local user reads with ``ps``), whether they came from a flag, the environment or ``--config``.
SECRET_SETTINGS = {
    "store": STORE_VARIABLE,
    "state_key": STATE_KEY_VARIABLE,
    "metrics_token": METRICS_TOKEN_VARIABLE,
}


def worker_launch(
    parser: argparse.ArgumentParser, args: argparse.Namespace, host: str, port: int
) -> tuple[list[str], dict[str, str]]:
    """A worker's command line and environment under ``serve --workers`` (the supervisor's
    resolved settings; those that may hold a secret in the environment only)."""
    shown = f"[{host}]" if ":" in host else host
    leave_out = ("http", "workers", "worker_of", "config", *SECRET_SETTINGS)
    command = [sys.executable, "-m", "mcp_trio._cli", "serve", args.target, *as_argv(parser, args, leave_out)]
    command += ["--http", f"{shown}:{port}", "--workers", "1"]
    environment = allocator_environment(args.allocator, network=True) or dict(os.environ)
    environment.pop(STORE_VARIABLE, None)  # (the resolved value below, or the default)
    if args.store:
        environment[STORE_VARIABLE] = args.store
    environment[STATE_KEY_VARIABLE] = args.state_key or secrets.token_hex(32)
    environment.pop(METRICS_TOKEN_VARIABLE, None)
    if args.metrics_token:
        environment[METRICS_TOKEN_VARIABLE] = args.metrics_token
    return command, environment


def apply_state_key(server: Any, args: argparse.Namespace) -> None:
    """Give ``server`` the ``--state-key`` (or MCP_TRIO_STATE_KEY); with a shared store and no
    key, warn: a multi-round-trip request begun here would fail on another process."""
    if args.state_key:
        key = str(args.state_key).encode()
        if len(key) < 16:
            raise ConfigError("--state-key: at least 16 characters")
        server.use_state_key(key)
    elif _shared_store(args) and args.worker_of is None:
        log.warning(
            "--store without --state-key: 2026-07-28 multi-round-trip requests begun on this "
            "process fail on the others; give every process the same MCP_TRIO_STATE_KEY"
        )
