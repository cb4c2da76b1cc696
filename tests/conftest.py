from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._support.paths import ROOT
from tests._support.schema import schema_dir
from tools.redis_server import RedisServer

# Tests run the generator and examples from the source tree.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def mcp_schema_dir() -> Path:
    found = schema_dir()
    if found is None:
        pytest.skip("the official MCP schemas are not available on this machine")
    return found


# The test tiers. A test of a slow tier carries that tier's marker (one at most); the default run,
# the fast tier, is every test without one. ``-m`` picks tests by marker instead (``-m soak``,
# ``-m "interop or docs"``), and ``--all-tiers`` runs every tier.
TIERS: dict[str, str] = {
    "soak": "every attack at once against each HTTP door, minutes of load",
    "perf": "benchmark guards (ratios against peers), memory figures, the benchmarks' own tests",
    "fuzz": "the fuzzer's whole campaigns against this project's own servers and clients",
    "conformance": "the official conformance suites, run by Node (installed by the runner)",
    "interop": "other implementations and real services: peer SDKs, FastMCP, nginx, Redis",
    "docs": "the documentation's examples and the README, run as written",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--all-tiers",
        action="store_true",
        help=f"run the slow tiers too ({', '.join(TIERS)}); without it and without -m: the fast tier only",
    )


def pytest_configure(config: pytest.Config) -> None:
    for name, what in TIERS.items():
        config.addinivalue_line("markers", f"{name}: the {name} tier: {what}")


def _fast_tier_only(config: pytest.Config) -> bool:
    return not config.option.markexpr and not config.getoption("--all-tiers")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject.toml's addopts): parallel workers for the fast tier, whose time is mostly
    waiting on sockets and subprocesses (3 a core); none when a slow tier is chosen, so that those that
    measure time or start shared installs (Node, Redis) run alone. ``-n N`` overrides."""
    if not _fast_tier_only(config) or any("::" in arg for arg in config.args):
        return 0
    return min(8, 3 * (os.cpu_count() or 1))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tiered: dict[str, int] = {}
    fast: list[pytest.Item] = []
    for item in items:
        tiers = [name for name in TIERS if item.get_closest_marker(name) is not None]
        if len(tiers) > 1:
            raise pytest.UsageError(f"{item.nodeid} is marked for the tiers {', '.join(tiers)}: one at most")
        if tiers:
            tiered[tiers[0]] = tiered.get(tiers[0], 0) + 1
        else:
            fast.append(item)
    if not _fast_tier_only(config):
        return
    config.stash[_LEFT_OUT] = tiered
    if len(fast) < len(items):
        kept = set(fast)
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = fast


_LEFT_OUT = pytest.StashKey[dict[str, int]]()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if _fast_tier_only(config):
        left_out = config.stash.get(_LEFT_OUT, {})  # (under -n, each worker collects: see its count)
        counts = f" ({', '.join(f'{n} {name}' for name, n in left_out.items())})" if left_out else ""
        terminalreporter.write_line(
            f"Fast tier only; the slow tiers were left out{counts}: run one with -m TIER "
            f"({', '.join(TIERS)}), or all of them with --all-tiers (.ci/run runs each)."
        )


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One real redis-server for the test session (each test uses a key prefix of its own);
    installed first if it is missing (tools/redis_server.py)."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()
