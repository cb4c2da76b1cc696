"""Line and arc coverage of the Python process it starts in, told over a side channel.

``mcp-trio fuzz --coverage python`` prepends this directory to the target's ``PYTHONPATH``, so
that the interpreter imports this module at start-up (as ``sitecustomize``) when
``MCP_TRIO_COVERAGE_DIR`` names a directory.  It records each line run (file, line) and each
arc (file, line before, line) in code whose file is in scope: under one of the path prefixes of
``MCP_TRIO_COVERAGE_INCLUDE`` (``os.pathsep``-separated) when it is set, else anywhere but the
standard library and this directory (``site-packages`` are in scope: the implementation under
test and what it is built on).  It uses ``sys.monitoring`` on Python 3.12 and later (each
line recorded once, then disabled: nearly free; arcs are the branches taken), ``sys.settrace``
before (arcs are every move from one line to another within a frame; a function every line of
which has run is traced no more, so its arcs from then on are not recorded).

The side channel is ``MCP_TRIO_COVERAGE_DIR/py-PID.cov``, appended to by a daemon thread every
:data:`FLUSH_EVERY` seconds (and at exit) with only what is new since its last write, one record
a line: ``F id path`` (a file in scope, first seen), ``L id n,n,...`` (lines), ``A id p:n,...``
(arcs; ``p`` is 0 on entry into a frame), fields separated by tabs.  Each location is written
once per process, so the file never grows past the size of the code in scope.  The protocol's
stdin, stdout and stderr are left alone.  A ``sitecustomize`` further along the path is
imported after this one.
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
import sysconfig
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

DIR_ENV = "MCP_TRIO_COVERAGE_DIR"
INCLUDE_ENV = "MCP_TRIO_COVERAGE_INCLUDE"
#: Seconds between two writes of what is new (nothing is written when nothing is).
FLUSH_EVERY = 0.02
#: ``sys.monitoring`` on 3.12 and 3.13: a branch taken this many times, always the same way, is
#: no longer watched.
ONE_WAY = 64

_Tracer = Callable[[FrameType, str, Any], Any]


class Recorder:
    """The locations seen so far, those not yet written, and the side channel's file."""

    def __init__(self, out_dir: str, include: list[str]) -> None:
        self.path = os.path.join(out_dir, f"py-{os.getpid()}.cov")
        self.include = tuple(os.path.realpath(p) for p in include if p)
        here = os.path.dirname(os.path.realpath(__file__))
        paths = sysconfig.get_paths()
        # (in a virtual environment "platstdlib" is the environment's lib/pythonX.Y, which holds
        # its site-packages: those stay in scope)
        self.exclude = (here, *{os.path.realpath(paths[name]) + os.sep for name in ("stdlib", "platstdlib")})
        self.sites = tuple({os.path.realpath(paths[name]) + os.sep for name in ("purelib", "platlib")})
        self.files: dict[str, int] = {}
        self.scope: dict[CodeType, int] = {}  # a code object's file id; -1: out of scope
        self.seen: set[tuple[int, int, int]] = set()  # (file, line, -1) and (file, before, line)
        self.pending: list[tuple[int, int, int]] = []
        self.new_files: list[tuple[int, str]] = []
        self.left: dict[CodeType, set[int]] = {}  # settrace: a code object's lines not run yet
        self.done: set[CodeType] = set()  # settrace: code objects every line of which has run
        self.lock = threading.Lock()
        self.stopped = threading.Event()

    def file_id(self, code: CodeType) -> int:
        fid = self.scope.get(code)
        if fid is None:
            fid = self._classify(code.co_filename)
            self.scope[code] = fid
        return fid

    def _classify(self, filename: str) -> int:
        if filename in self.files:
            return self.files[filename]
        real = os.path.realpath(filename) if not filename.startswith("<") else ""
        if not real or real.startswith(self.exclude[0]):
            in_scope = False
        elif self.include:
            in_scope = real.startswith(self.include)
        else:
            in_scope = real.startswith(self.sites) or not real.startswith(self.exclude)
        if not in_scope:
            return -1
        with self.lock:
            fid = self.files.get(filename)
            if fid is None:
                fid = self.files[filename] = len(self.files) + 1
                self.new_files.append((fid, real))
        return fid

    def see(self, item: tuple[int, int, int]) -> None:
        if item not in self.seen:
            self.seen.add(item)
            self.pending.append(item)

    # -- the side channel

    def flush(self) -> None:
        """Append what is new since the last write to the side channel's file."""
        with self.lock:
            files, self.new_files = self.new_files, []
            count = len(self.pending)
            items = self.pending[:count]
            del self.pending[:count]  # (appends racing with this are kept for the next write)
        if not files and not items:
            return
        lines: dict[int, list[str]] = {}
        arcs: dict[int, list[str]] = {}
        for fid, a, b in items:
            if b < 0:
                lines.setdefault(fid, []).append(str(a))
            else:
                arcs.setdefault(fid, []).append(f"{a}:{b}")
        out = [f"F\t{fid}\t{path}\n" for fid, path in files]
        out += [f"L\t{fid}\t{','.join(ns)}\n" for fid, ns in lines.items()]
        out += [f"A\t{fid}\t{','.join(ps)}\n" for fid, ps in arcs.items()]
        try:
            with open(self.path, "a", encoding="utf-8") as channel:
                channel.write("".join(out))
        except OSError:
            pass

    def run_flusher(self) -> None:
        while not self.stopped.wait(FLUSH_EVERY):
            self.flush()

    # -- sys.settrace (before 3.12)

    def global_tracer(self, frame: FrameType, event: str, arg: Any) -> _Tracer | None:
        if event != "call":
            return None
        code = frame.f_code
        fid = self.scope.get(code)
        if fid is None:
            fid = self.file_id(code)
        if fid < 0 or code in self.done:
            return None
        return self._local_tracer(fid, code)

    def _lines_left(self, code: CodeType) -> set[int]:
        """The lines of ``code`` no line event has come from yet (a function's ``def`` line
        runs in the code around it)."""
        left = self.left.get(code)
        if left is None:
            left = {line for _, _, line in code.co_lines() if line is not None}
            if code.co_name != "<module>":
                left.discard(code.co_firstlineno)
            self.left[code] = left
        return left

    def _local_tracer(self, fid: int, code: CodeType) -> _Tracer:
        seen, pending = self.seen, self.pending
        left = self._lines_left(code)
        done = self.done
        before = 0

        def local(frame: FrameType, event: str, arg: Any) -> _Tracer | None:
            # (one tuple and one look-up a line once it is known: a line is new only when an
            # arc into it is)
            nonlocal before
            if event == "line":
                line = frame.f_lineno
                arc = (fid, before, line)
                if arc not in seen:
                    seen.add(arc)
                    pending.append(arc)
                    item = (fid, line, -1)
                    if item not in seen:
                        seen.add(item)
                        pending.append(item)
                    left.discard(line)
                    if not left:  # every line of it has run: its frames are traced no more
                        done.add(code)
                before = line
            return local

        return local


def _start_settrace(recorder: Recorder) -> None:
    threading.settrace(recorder.global_tracer)
    sys.settrace(recorder.global_tracer)


def _start_monitoring(recorder: Recorder) -> bool:
    """Record with ``sys.monitoring`` (3.12+): each line and branch once, then disabled."""
    if sys.version_info < (3, 12):
        return False
    mon = sys.monitoring
    tool = mon.COVERAGE_ID
    try:
        mon.use_tool_id(tool, "mcp-trio-fuzz")
    except ValueError:  # another coverage tool has the slot: trace instead
        return False
    disable = mon.DISABLE
    starts: dict[CodeType, list[tuple[int, int, int | None]]] = {}

    def line_at(code: CodeType, offset: int) -> int:
        spans = starts.get(code)
        if spans is None:
            spans = starts[code] = list(code.co_lines())
        for start, end, line in spans:
            if start <= offset < end:
                return line or 0
        return 0

    def on_line(code: CodeType, line: int) -> Any:
        fid = recorder.file_id(code)
        if fid >= 0:
            recorder.see((fid, line, -1))
        return disable

    split = sys.version_info >= (3, 14)  # (one event per direction: each disabled on its own)
    taken: dict[tuple[CodeType, int], set[int]] = {}
    passes: dict[tuple[CodeType, int], int] = {}

    def on_branch(code: CodeType, offset: int, destination: int) -> Any:
        fid = recorder.file_id(code)
        if fid < 0:
            return disable
        recorder.see((fid, line_at(code, offset), line_at(code, destination)))
        if split:
            return disable
        # (3.12, 3.13: one event for both directions; disabled once both were taken, or after
        # ONE_WAY events the same way: a hot branch must not cost on every pass; its other
        # direction, when a later input takes it, still shows as new lines)
        key = (code, offset)
        ways = taken.setdefault(key, set())
        ways.add(destination)
        passes[key] = passes.get(key, 0) + 1
        return disable if len(ways) > 1 or passes[key] >= ONE_WAY else None

    events = mon.events
    branches = (events.BRANCH_LEFT, events.BRANCH_RIGHT) if split else (events.BRANCH,)
    mon.register_callback(tool, events.LINE, on_line)
    wanted = events.LINE
    for event in branches:
        mon.register_callback(tool, event, on_branch)
        wanted |= event
    mon.set_events(tool, wanted)
    return True


def start(out_dir: str, include: list[str]) -> Recorder:
    """Record this process' coverage into ``out_dir`` from now on (see the module's docstring)."""
    recorder = Recorder(out_dir, include)
    if not _start_monitoring(recorder):
        _start_settrace(recorder)
    flusher = threading.Thread(target=recorder.run_flusher, name="mcp-trio-coverage", daemon=True)
    flusher.start()
    atexit.register(recorder.flush)
    return recorder


def _chain() -> None:
    """Import the ``sitecustomize`` this one shadows, if there is one further along the path."""
    here = os.path.dirname(os.path.realpath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != here]
    this = sys.modules.pop("sitecustomize", None)
    try:
        importlib.import_module("sitecustomize")  # (the next one on the path)
    except ImportError:
        if this is not None:
            sys.modules["sitecustomize"] = this


if os.environ.get(DIR_ENV):
    start(os.environ[DIR_ENV], os.environ.get(INCLUDE_ENV, "").split(os.pathsep))
_chain()
