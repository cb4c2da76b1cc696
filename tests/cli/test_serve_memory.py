"""What ``mcp-trio serve`` does with its memory: it gives back what a burst of traffic took once
the burst is over, on the allocator the interpreter started with (no second start by default),
or on the C library's with ``--allocator system`` (a re-execution) or ``PYTHONMALLOC=malloc``
(mcp_trio/_cli/_tuning.py)."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
import weakref
from pathlib import Path

import httpx2
import pytest
import trio
import trio.testing

from mcp_trio._cli import _tuning
from tests._support.cli import serving, session_headers
from tests._support.engine import call

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc and /proc"),
    pytest.mark.perf,
]

BURST_APP = """
from mcp_trio.server import Server

server = Server("burst", "1.0")


@server.tool
async def burst(megabytes: int) -> int:
    "Build about this many MiB of small objects in reference cycles, then drop them."
    nodes = []
    for _ in range(megabytes * 4000):
        node = {"payload": "x" * 100}
        node["self"] = node  # freed only by a collection
        nodes.append(node)
    return len(nodes)
"""


def _environment(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(pair.decode().split("=", 1) for pair in pairs if b"=" in pair)


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.fixture
def app(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text(BURST_APP)
    return tmp_path


@pytest.mark.parametrize(
    ("flags", "preset", "expected"),
    [
        (["--http", "127.0.0.1:0"], None, None),  # (no second start unless asked for)
        (["--http", "127.0.0.1:0", "--allocator", "pymalloc"], None, None),
        (["--http", "127.0.0.1:0"], "malloc", "malloc"),  # a deployment's choice, no re-execution
        (["--http", "127.0.0.1:0", "--allocator", "system"], "pymalloc", "pymalloc"),  # it wins
        (["--http", "127.0.0.1:0", "--allocator", "system"], None, "malloc"),
        (["--allocator", "system"], None, "malloc"),  # (stdio too, when asked)
    ],
)
def test_the_allocator_a_server_runs_on(
    app: Path, flags: list[str], preset: str | None, expected: str | None
) -> None:
    env = {"PYTHONMALLOC": preset} if preset else None
    with serving(["app.py", *flags], app, env) as served:
        if "--http" in flags:
            served.wait_for(" at ")
        else:
            _answer_a_ping(served.proc)
        # The same process (re-executed in place, same arguments, only for --allocator system:
        # the environment shows it), on the allocator chosen.
        assert _environment(served.proc.pid).get("PYTHONMALLOC") == expected
        cmdline = Path(f"/proc/{served.proc.pid}/cmdline").read_bytes().split(b"\0")
        assert [part.decode() for part in cmdline[-len(flags) - 1 : -1]] == flags


def _answer_a_ping(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    proc.stdin.flush()
    assert b'"id":1' in proc.stdout.readline()  # (answered: past the point where serve re-executes)


def test_only_system_asks_for_a_second_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """``auto`` (the default) never re-executes serve; the workers of ``--workers``, started
    anyway, get the C library's allocator on glibc."""
    monkeypatch.delenv("PYTHONMALLOC", raising=False)
    assert _tuning.reexec_environment("auto") is None
    assert _tuning.reexec_environment("pymalloc") is None
    assert (_tuning.reexec_environment("system") or {}).get("PYTHONMALLOC") == "malloc"
    worker = _tuning.allocator_environment("auto", network=True)
    assert (worker or {}).get("PYTHONMALLOC") == ("malloc" if _tuning._glibc() else None)
    monkeypatch.setenv("PYTHONMALLOC", "pymalloc")
    assert _tuning.reexec_environment("system") is None
    assert _tuning.allocator_environment("system", network=True) is None


def test_a_stdio_server_keeps_cpythons_allocator(app: Path) -> None:
    with serving(["app.py"], app) as served:
        _answer_a_ping(served.proc)
        assert "PYTHONMALLOC" not in _environment(served.proc.pid)


@pytest.mark.parametrize("allocator", ["auto", "system"])
def test_memory_a_burst_took_goes_back_once_it_is_over(app: Path, allocator: str) -> None:
    flags = ["--http", "127.0.0.1:0", "--allocator", allocator]
    with serving(["app.py", *flags], app) as served, httpx2.Client(timeout=30) as client:
        url = served.url
        headers = session_headers(client, url)
        r = client.post(url, headers=headers, json=call(2, "burst", megabytes=1))
        assert r.status_code == 200, r.text
        time.sleep(2.5)  # (the quiet seconds after the warm-up are tidied too)
        before = _rss_mib(served.proc.pid)
        r = client.post(url, headers=headers, json=call(3, "burst", megabytes=150))
        assert r.status_code == 200, r.text
        peak = _rss_mib(served.proc.pid)
        assert peak > before + 100, (before, peak)  # the cycles are still there: garbage
        deadline = time.monotonic() + 10
        while (after := _rss_mib(served.proc.pid)) > before + 10 and time.monotonic() < deadline:
            time.sleep(0.25)
        assert after <= before + 10, (
            f"RSS {before:.0f} MiB before the burst, {peak:.0f} at its end, {after:.0f} after"
        )


@pytest.mark.parametrize(
    ("after_the_burst", "tidied"),
    [(0.07, True), (0.2, False), (0.01, True)],  # a trickle of 7% of a core, a load of 20%, idle
)
async def test_tidying_starts_once_a_burst_is_over(
    after_the_burst: float,
    tidied: bool,
    monkeypatch: pytest.MonkeyPatch,
    autojump_clock: trio.testing.MockClock,
) -> None:
    """After periods at 80% of a core, one under a tenth of that counts as quiet even above
    5% of a core (sessions and streams of the burst ending): the free pages go back then."""
    cpu = [0.0]
    monkeypatch.setattr(_tuning.time, "process_time", lambda: cpu[0])
    trims: list[float] = []

    def trim(pad: int) -> int:
        trims.append(trio.current_time())
        return 1

    async with trio.open_nursery() as nursery:
        nursery.start_soon(_tuning._tidy, trim)
        await trio.sleep(0.5)  # (between the tidying task's looks, one a second)
        for used in (0.8, 0.8, after_the_burst, after_the_burst):
            cpu[0] += used
            await trio.sleep(_tuning.TIDY_PERIOD)
        nursery.cancel_scope.cancel()
    assert bool(trims) is tidied, trims
    if tidied:
        assert trims[0] == 3.0  # the first look after the burst


async def test_tidying_drops_the_deadline_records_of_scopes_that_ended() -> None:
    """A scope that ended before its deadline stays referenced by trio's deadline heap until
    that deadline; the tidying drops it (and what it holds) at once."""
    scopes = []
    for _ in range(100):
        with trio.CancelScope(deadline=trio.current_time() + 1800) as scope:
            await trio.lowlevel.checkpoint()
        scopes.append(weakref.ref(scope))
    del scope
    gc.collect()
    assert all(ref() is not None for ref in scopes)  # (trio's heap holds them)
    assert _tuning._prune_deadlines(), "this trio release keeps its deadline heap elsewhere"
    gc.collect()
    assert all(ref() is None for ref in scopes)


BIG_BLOCKS = """
import resource
from mcp_trio._cli import _tuning

assert _tuning._malloc_trim() is not None  # (the thresholds are set with it)
faults = []
for _ in range(4):  # a 4 MiB answer, encoded, then freed; again
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = bytearray(4 << 20)  # (zeroed: every page touched)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    del block
print(faults)
"""


@pytest.mark.parametrize("allocator", ["malloc", "pymalloc"])
def test_big_blocks_reuse_the_heaps_pages(allocator: str) -> None:
    """A 4 MiB block, freed, leaves its pages to the next one: no page fault for each 4 KiB
    of every big answer (a mapping of its own per block took about 1,000 per 4 MiB), on either
    allocator (pymalloc hands big blocks to the C library's)."""
    done = subprocess.run(
        [sys.executable, "-c", BIG_BLOCKS],
        env={**os.environ, "PYTHONMALLOC": allocator},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    first, *later = json.loads(done.stdout)
    assert first >= 512, first  # the heap grew once, a page at a time
    assert max(later) < 64, later  # then its pages were used again


CACHED_BLOCKS = """
import ctypes, sys
from mcp_trio._cli import _tuning

def heap_kib() -> int:
    inside = False
    for line in open("/proc/self/smaps"):
        if line.split()[-1] == "[heap]":
            inside = True
        elif inside and line.startswith("Rss:"):
            return int(line.split()[1])
    raise AssertionError("no [heap] mapping")

trim = _tuning._malloc_trim()
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
spacers, cached = [], []
for size in _tuning.TCACHE_SIZES:  # the last blocks a burst freed, each on a page of its own
    for _ in range(_tuning.TCACHE_COUNT):
        cached.append(libc.malloc(size))
        spacers.append(libc.malloc(8 << 10))
guard = libc.malloc(64)  # (the freed pages are inside the heap, not at its top)
for block in spacers + cached:  # (the cached ones last: they stay in the C library's cache)
    libc.free(block)
del spacers, cached, block  # (their addresses: Python objects next to each block)
before = heap_kib()
if sys.argv[1] == "tidying":
    trim(0)
else:
    libc.malloc_trim(0)
print(before - heap_kib())
"""


def test_the_trim_reaches_the_blocks_in_the_c_librarys_cache() -> None:
    """The tidying's trim gives back the pages that only a block in glibc's cache of freed
    blocks holds (448 at most, a page each at worst), which ``malloc_trim`` alone keeps."""
    given_back = {}
    for how in ("malloc_trim", "tidying"):
        done = subprocess.run(
            [sys.executable, "-c", CACHED_BLOCKS, how],
            env={**os.environ, "PYTHONMALLOC": "malloc"},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        given_back[how] = int(done.stdout)
    assert given_back["tidying"] - given_back["malloc_trim"] > 1024, given_back  # KiB
