"""Coverage feedback for ``--stdio`` server campaigns (``mcp-trio fuzz --coverage``): what the
target process ran, read over a side channel, never over the protocol's stdin and stdout.

A :class:`CoverageFeed` adds to the target's environment what makes the process record its own
coverage into a directory of the feed's, and reads it back: :meth:`CoverageFeed.collect` says
how many locations are new to the campaign since it was last called (the runner gives that to
``hypothesis.target``, so that the search prefers inputs reaching new code), and
:meth:`CoverageFeed.to_json` how many the campaign reached.

* :class:`PythonCoverage`: the directory ``_coverage_boot`` is prepended to ``PYTHONPATH``; its
  ``sitecustomize`` records lines and arcs (``sys.monitoring`` on 3.12+, ``sys.settrace``
  before) and appends what is new to ``py-PID.cov`` every 20 ms (see its docstring).  In scope:
  the files under the ``include`` prefixes, else every file but the standard library.
* :class:`NodeCoverage`: ``NODE_V8_COVERAGE`` names the directory, and ``NODE_OPTIONS``
  preloads ``take_coverage.cjs``, which has V8 write the block coverage every 50 ms (V8 writes
  it at exit too; each file is read once, then deleted).  A block is (script URL, function,
  start offset, end offset), run when its count is above 0 (:func:`v8_blocks`); only ``file:``
  scripts count (not ``node:`` internals), under ``include`` when given.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

__all__ = [
    "COVERAGE_KINDS",
    "CoverageFeed",
    "NodeCoverage",
    "PythonCoverage",
    "coverage_feed",
    "detect_kind",
    "v8_blocks",
]

COVERAGE_KINDS = ("python", "node")
BOOT = Path(__file__).with_name("_coverage_boot")
_PYTHON = re.compile(r"^(python|pypy)[0-9.]*(\.exe)?$")
_NODE = re.compile(r"^(node|nodejs|npx|tsx|ts-node|bun)(\.exe|\.cmd)?$")
#: A V8 coverage file that still does not parse after this many seconds is given up on.
PARTIAL_GRACE = 2.0


def detect_kind(argv: Sequence[str]) -> str | None:
    """``python`` or ``node`` for a command that runs one (by the program's name, else by the
    script it is given), None when it cannot tell."""
    if not argv:
        return None
    program = os.path.basename(argv[0]).lower()
    if _PYTHON.match(program) or os.path.realpath(argv[0]) == os.path.realpath(sys.executable):
        return "python"
    if _NODE.match(program):
        return "node"
    script = next((a for a in argv[1:] if not a.startswith("-")), "")
    if script.endswith(".py"):
        return "python"
    if script.endswith((".js", ".mjs", ".cjs")):
        return "node"
    return None


class CoverageFeed(ABC):
    """What a target process ran, reached by the campaigns of a run, one set per campaign."""

    kind = "none"
    #: Seconds to wait after an example before reading, so that the process has written what
    #: the example made it run (one write interval of the process).
    settle = 0.0
    #: How many times slower a recording process may answer (``mcp-trio fuzz`` waits this much
    #: longer by default, so that slowness the recorder causes is no finding).
    slower = 1.0

    def __init__(self, include: Sequence[str] = ()) -> None:
        self.include = [os.path.realpath(p) for p in include]
        self.directory = Path(tempfile.mkdtemp(prefix=f"mcp-trio-coverage-{self.kind}-"))
        self.reached: set[Hashable] = set()  # this campaign's
        self.total: set[Hashable] = set()  # the run's

    @abstractmethod
    def environ(self, base: Mapping[str, str]) -> dict[str, str]:
        """The target's environment: ``base`` and what makes the process record its coverage."""

    @abstractmethod
    def _read(self) -> Iterator[Hashable]:
        """The locations written since the last read (repeats allowed)."""

    def collect(self, wait: bool = False) -> int:
        """Read the side channel: the number of locations new to the campaign since the last call
        (``wait``: first give the process :attr:`settle` seconds to write what it ran)."""
        if wait and self.settle:
            time.sleep(self.settle)
        new = 0
        for item in self._read():
            if item not in self.reached:
                self.reached.add(item)
                self.total.add(item)
                new += 1
        return new

    def begin_campaign(self) -> None:
        """Count from nothing again (what earlier processes wrote late still goes to the campaign
        before)."""
        self.collect()
        self.reached = set()

    def to_json(self) -> dict[str, Any]:
        """What the campaign reached: distinct locations by sort (lines, arcs; blocks)."""
        self.collect()
        return {"kind": self.kind, **self._counts(self.reached), "run_total": len(self.total)}

    @abstractmethod
    def _counts(self, items: set[Hashable]) -> dict[str, int]:
        """The number of ``items`` by sort (the keys of :meth:`to_json`)."""

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


class PythonCoverage(CoverageFeed):
    """Lines and arcs of a Python target (its ``sitecustomize``: ``_coverage_boot``)."""

    kind = "python"
    settle = 0.025
    #: (``sys.settrace`` before 3.12: the pinned Python SDK answered at 0.17x its speed recording
    #: every file, and first answered after 5.1 s against 1.8)
    slower = 4.0

    def __init__(self, include: Sequence[str] = ()) -> None:
        super().__init__(include)
        self.offsets: dict[str, int] = {}  # channel file -> bytes read
        self.paths: dict[str, dict[str, str]] = {}  # channel file -> its file ids' paths
        self.rest: dict[str, bytes] = {}  # channel file -> a last line not yet whole

    def environ(self, base: Mapping[str, str]) -> dict[str, str]:
        path = os.pathsep.join(p for p in (str(BOOT), base.get("PYTHONPATH", "")) if p)
        env = {**base, "PYTHONPATH": path, "MCP_TRIO_COVERAGE_DIR": str(self.directory)}
        if self.include:
            env["MCP_TRIO_COVERAGE_INCLUDE"] = os.pathsep.join(self.include)
        return env

    def _read(self) -> Iterator[Hashable]:
        for entry in sorted(os.scandir(self.directory), key=lambda e: e.name):
            if not entry.name.endswith(".cov"):
                continue
            start = self.offsets.get(entry.name, 0)
            with open(entry.path, "rb") as channel:
                channel.seek(start)
                data = channel.read()
            if not data:
                continue
            self.offsets[entry.name] = start + len(data)
            *whole, self.rest[entry.name] = (self.rest.get(entry.name, b"") + data).split(b"\n")
            paths = self.paths.setdefault(entry.name, {})
            for line in whole:
                yield from self._records(paths, line.decode("utf-8", "replace"))

    @staticmethod
    def _records(paths: dict[str, str], line: str) -> Iterator[Hashable]:
        sort, _, rest = line.partition("\t")
        fid, _, values = rest.partition("\t")
        if sort == "F":
            paths[fid] = values
        elif sort == "L" and fid in paths:
            for n in values.split(","):
                yield ("line", paths[fid], n)
        elif sort == "A" and fid in paths:
            for arc in values.split(","):
                yield ("arc", paths[fid], arc)

    def _counts(self, items: set[Hashable]) -> dict[str, int]:
        lines = sum(1 for item in items if isinstance(item, tuple) and item[0] == "line")
        files = {item[1] for item in items if isinstance(item, tuple)}
        return {"lines": lines, "arcs": len(items) - lines, "files": len(files)}


#: Per function (script URL, start offset of the function), every range V8 has listed for it.
Catalog = dict[tuple[str, int], set[tuple[int, int]]]


def v8_blocks(
    data: Mapping[str, Any], include: Sequence[str] = (), catalog: Catalog | None = None
) -> set[tuple[str, str, int, int]]:
    """The blocks a V8 coverage document (``NODE_V8_COVERAGE``'s JSON, or
    ``Profiler.takePreciseCoverage``'s result) shows run: (script URL, function name, start
    offset, end offset), in ``file:`` scripts only (``node:`` internals and evaluated code left
    out), under one of the ``include`` path prefixes if given.

    V8 lists a function's range and, nested in it, the ranges whose count differs from the one
    around them (a block run as often as its function is not listed).  A block is known from any
    document that listed it (``catalog`` keeps them across documents: a branch not taken in one
    write is a range listed with count 0, taken in a later one it is not listed at all); it ran
    when the innermost range of this document around it counted above 0."""
    catalog = {} if catalog is None else catalog
    blocks: set[tuple[str, str, int, int]] = set()
    for script in data.get("result", ()):
        url = str(script.get("url", ""))
        if not url.startswith("file:"):
            continue
        if include and not unquote(urlparse(url).path).startswith(tuple(include)):
            continue
        for function in script.get("functions", ()):
            listed = [
                (int(r["startOffset"]), int(r["endOffset"]), int(r.get("count", 0)))
                for r in function.get("ranges", ())
            ]
            if not listed:
                continue
            known = catalog.setdefault((url, listed[0][0]), set())
            known.update((start, end) for start, end, _ in listed)
            name = str(function.get("functionName", ""))
            blocks.update((url, name, start, end) for start, end in known if _count(listed, start, end) > 0)
    return blocks


def _count(listed: Sequence[tuple[int, int, int]], start: int, end: int) -> int:
    """The count of the block ``start``-``end``: the innermost listed range around it (V8 lists
    the outer ranges first), 0 when none is."""
    count, size = 0, None
    for outer_start, outer_end, n in listed:
        if outer_start <= start and end <= outer_end and (size is None or outer_end - outer_start <= size):
            count, size = n, outer_end - outer_start
    return count


class NodeCoverage(CoverageFeed):
    """Blocks of a Node target, from the files V8 writes into ``NODE_V8_COVERAGE``."""

    kind = "node"
    every_ms = 50
    settle = 0.06

    def __init__(self, include: Sequence[str] = ()) -> None:
        super().__init__(include)
        self.boot = BOOT.as_uri()  # (the preload itself: left out)
        self.catalog: Catalog = {}
        self.first_seen: dict[str, float] = {}  # a file that did not parse yet -> when first seen

    def environ(self, base: Mapping[str, str]) -> dict[str, str]:
        preload = str(BOOT / "take_coverage.cjs")
        options = " ".join(p for p in (base.get("NODE_OPTIONS", ""), f'--require "{preload}"') if p)
        return {
            **base,
            "NODE_V8_COVERAGE": str(self.directory),
            "NODE_OPTIONS": options,
            "MCP_TRIO_COVERAGE_EVERY_MS": str(self.every_ms),
        }

    def _read(self) -> Iterator[Hashable]:
        for entry in sorted(os.scandir(self.directory), key=lambda e: e.name):
            if not entry.name.endswith(".json"):
                continue
            try:
                data = json.loads(Path(entry.path).read_bytes())
            except (OSError, ValueError):  # still being written: next time (or given up on)
                first = self.first_seen.setdefault(entry.name, time.monotonic())
                if time.monotonic() - first < PARTIAL_GRACE:
                    continue
                data = {}
            self.first_seen.pop(entry.name, None)
            os.unlink(entry.path)  # (read once: the directory stays small)
            blocks = v8_blocks(data, self.include, self.catalog)
            yield from (block for block in blocks if not block[0].startswith(self.boot))

    def _counts(self, items: set[Hashable]) -> dict[str, int]:
        functions = {(item[0], item[1]) for item in items if isinstance(item, tuple)}
        scripts = {item[0] for item in items if isinstance(item, tuple)}
        return {"blocks": len(items), "functions": len(functions), "scripts": len(scripts)}


def coverage_feed(kind: str, argv: Sequence[str], include: Sequence[str] = ()) -> CoverageFeed:
    """The feed for ``kind`` (``python``, ``node``, or ``auto``: told by :func:`detect_kind`);
    ValueError when ``auto`` cannot tell or the kind is unknown."""
    chosen = detect_kind(argv) if kind == "auto" else kind
    if chosen == "python":
        return PythonCoverage(include)
    if chosen == "node":
        return NodeCoverage(include)
    if kind == "auto":
        raise ValueError(
            f"--coverage auto cannot tell whether {argv[0]!r} runs Python or Node: pass "
            "--coverage python or --coverage node"
        )
    raise ValueError(f"unknown coverage kind {kind!r} (python, node or auto)")
