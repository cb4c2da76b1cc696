"""What mcp-trio serve does to its own process: short GC pauses, and memory that goes back.

So that a busy server answers every client promptly, the garbage collector's full passes are
kept short.

CPython's full collection walks every tracked object of the process.  A server that imported
its tools, the generated types and the transports holds some 100,000 objects that are never
garbage; under load (hundreds of sessions and connections) a full pass walked them all again
every few seconds, tens of milliseconds each time with every client waiting.
:func:`settle_heap` runs once, after the server is loaded and before it serves: it collects,
then moves what is left into the permanent generation (:func:`gc.freeze`), so that later
collections walk only what the server built since.

It also raises the youngest generation's threshold from CPython's 700 to ``GC_THRESHOLD``
(20,000) net new container objects.  A server's requests make objects that reference counting
frees at once (a request's dicts, its task, its answer), and no reference cycle is left by an
ended session or connection; but with 700, every burst of work (a batch decoded, a hundred
connections accepted) started a young collection, each one walking every object still alive
in that burst, and every tenth of them a middle one: in a soak of ten attacks at once, some
300 collections, 0.5-0.7 s of pauses in 12 s (a middle one up to 30 ms, a full one up to
70 ms), with every client waiting and nothing found to collect.  At 20,000 the same load
starts a handful.  The bound it costs: at most that many container objects of cyclic garbage
(a few MiB) wait for the next collection; the older generations' thresholds stay CPython's.

So that memory taken by a burst of traffic goes back to the system once the burst is over,
a server on Linux with glibc hands the C library's free pages back once the burst is over
(``malloc_trim``), and big blocks (an answer of a few MiB) come from the C library's heap
(``mallopt``, set at run time: see :func:`_malloc_trim`).  What CPython's own small-object
allocator (pymalloc) holds is out of reach of both: it gives an arena of 1 MiB back only when
every object in it is gone, and after thousands of connections and queued requests, a few
dozen long-lived objects allocated meanwhile (a session, a log line's cache entry) can pin
arenas of otherwise free memory for the life of the process.  On the C library's allocator
(``PYTHONMALLOC=malloc``) every small block is the C library's too, so that the trim reaches
them, at about 6% more instructions per stdio call.  The allocator is chosen when the
interpreter starts: a deployment sets ``PYTHONMALLOC=malloc`` in the server's environment
(nothing more to start), ``--allocator system`` makes ``mcp-trio serve`` re-execute itself
(same process id, same arguments) with the variable set, at the cost of a second interpreter
start (about twice the cold start), and ``--allocator auto`` (the default) starts no second
process image: it keeps the allocator the interpreter started with, except for the workers of
``--workers``, started anyway, which get the C library's on glibc.  A ``PYTHONMALLOC`` already
in the environment is always left as it is.

What pinned the most pages after a burst on that allocator were trio's records of deadlines no
longer in force.  Each timeout that is moved (a session's idle timer, at every request) or left
early (a connection's keep-alive and request timers) leaves a record in trio's deadline heap,
holding its cancel scope, until the deadline's time comes (30 minutes for a session's idle
timer) or until trio prunes the heap, which it does once over a thousand are stale.  A burst
thus left a thousand small records scattered over as many pages of the heap: 4-6 MiB that no
trim could give back.  So the tidying also prunes trio's deadline heap (:func:`_prune_deadlines`,
the same pass trio makes by itself; through trio's internals, and skipped if a trio release
has moved them: tests/cli/test_serve_memory.py says so when it happens).

``malloc_trim`` gives back the pages of the blocks on the C library's free lists, but not those
of the blocks in its per-thread cache (the last few of each small size freed, up to 448 in
all), which it counts as in use.  After a burst those are wherever the burst's last frees left
them, one on a page of its own at worst: 1.75 MiB that no trim could reach, and whether a
burst left 0.5 or 1.7 MiB of them depended on chance (the soak test's result moved by 6% of
the server's memory from one build to the next with no change in what it kept).  So before
each trim the tidying empties that cache (:class:`_CacheDrain`): it takes the cached blocks
out, fills the cache with blocks of its own made at start (where the heap is dense anyway),
frees the taken ones to the free lists, which the trim reaches, and takes its own back.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from ..server import GracefulShutdown

__all__ = [
    "ALLOCATORS",
    "allocator_environment",
    "connections_within_open_files",
    "raise_open_files_limit",
    "reexec_environment",
    "run_on_allocator",
    "serve_tidying_after_bursts",
    "settle_heap",
]

ALLOCATORS = ("auto", "pymalloc", "system")
TIDY_PERIOD = 1.0  # seconds between two looks at the process's CPU time
QUIET_SHARE = 0.05  # of a core: under it, the process is quiet
QUIET_FRACTION = 0.1  # of the busiest period since the last tidying: under it too
TIDY_ROUNDS = 10  # quiet periods tidied in after a busier one
M_TRIM_THRESHOLD = -1  # mallopt's parameters (malloc.h)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024  # blocks up to this size come from the heap (glibc's maximum)
TRIM_THRESHOLD = 16 * 1024 * 1024  # free memory at the heap's top kept for the next big blocks
#: glibc's per-thread cache of freed blocks (tcache), by its defaults (the tunables
#: ``glibc.malloc.tcache_count`` and ``tcache_max``): up to 7 blocks of each of 64 sizes, 16
#: bytes apart from 24 bytes asked.
TCACHE_COUNT = 7
TCACHE_SIZES = tuple(24 + 16 * i for i in range(64))
GC_THRESHOLD = 20_000  # net new container objects between two young collections (CPython: 700)


#: Open files kept for what is not a client connection: listening sockets, the store's
#: connections, log files, what tools open.
FD_RESERVE = 64


def raise_open_files_limit() -> int | None:
    """Raise this process's soft limit on open files to its hard limit, as web servers do at
    start (a soft limit of 1,024 is common, and a connection flood would meet it before
    ``--max-connections``); the soft limit now in force (None where there is none to read)."""
    try:
        import resource
    except ImportError:  # (not on a Unix)
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):  # (over the kernel's nr_open: the limit stays)
            pass
    return None if soft == resource.RLIM_INFINITY else soft


def connections_within_open_files(wanted: int, open_files: int | None) -> int:
    """``wanted`` (``--max-connections``), lowered to what ``open_files`` allows past
    ``FD_RESERVE`` (so that an accept never fails for want of a descriptor), at least 1."""
    if open_files is None or wanted <= open_files - FD_RESERVE:
        return wanted
    return max(1, open_files - FD_RESERVE)


def settle_heap() -> None:
    """Collect, freeze what startup built, and make young collections rarer (see the
    module's docstring)."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, middle, old)


def _glibc() -> bool:
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError, AttributeError):  # not a glibc system
        return False


def allocator_environment(choice: str, network: bool) -> dict[str, str] | None:
    """The environment a new process serving (over a network or not) should start with for
    ``choice`` (``auto``: the C allocator for a network server on glibc, since a new process is
    started anyway); None when this process's own environment already does."""
    if "PYTHONMALLOC" in os.environ or choice == "pymalloc":
        return None
    if choice == "auto" and not (network and _glibc()):
        return None
    return {**os.environ, "PYTHONMALLOC": "malloc"}


def reexec_environment(choice: str) -> dict[str, str] | None:
    """The environment this process should re-execute itself with for ``choice``: only
    ``system`` asks for a second start (``auto`` and ``pymalloc`` keep the interpreter's
    allocator as it started); None when nothing is to change."""
    if choice != "system" or "PYTHONMALLOC" in os.environ:
        return None
    return {**os.environ, "PYTHONMALLOC": "malloc"}


def run_on_allocator(choice: str) -> None:
    """Re-execute this process (same id, same arguments) in the environment
    :func:`reexec_environment` asks for; returns when nothing is to change."""
    environment = reexec_environment(choice)
    if environment is None:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], environment)


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim`` on a glibc system, else None: on either allocator the big blocks
    (over 512 bytes on pymalloc, every block on the C one) are the C library's.  Also sets
    where big blocks (an answer of a few MiB, its encoding) come from: the heap, for blocks up to
    ``MMAP_THRESHOLD``, with up to ``TRIM_THRESHOLD`` of free memory kept at its top between
    two of them; what a burst leaves beyond that goes back at the tidying (``malloc_trim``).

    Left alone, glibc makes the first big blocks mappings of their own and then raises its
    threshold as they are freed, so that a process's behaviour depends on what it served first.
    A mapping of its own for every big block (glibc's initial threshold, 128 KiB, pinned) gives
    its pages back the moment it is freed, but the next one takes a page fault for each of its
    4 KiB pages: a 4 MiB answer built and encoded took 6.8-7.6 ms that way, against 1.6 ms on
    pages the heap already holds, every other client waiting meanwhile.

    The function returned empties the C library's cache of freed blocks before each trim
    (:class:`_CacheDrain`)."""
    if not _glibc():
        return None
    try:
        libc = ctypes.CDLL(None)
        trim = libc.malloc_trim
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
        drain = _CacheDrain(libc)
    except (OSError, AttributeError):
        return None

    def function(pad: int) -> int:  # (the cache emptied first: see the module's docstring)
        drain()
        return int(trim(pad))

    return function


class _CacheDrain:
    """Empties glibc's cache of freed small blocks of this thread, so that the next trim
    reaches their pages (see the module's docstring): two tables of ``TCACHE_COUNT`` blocks of
    each cached size, made once, so that a drain makes no Python object that could outlive
    it; about 230 KiB kept for the life of the process."""

    def __init__(self, libc: ctypes.CDLL) -> None:
        self._malloc = libc.malloc
        self._malloc.restype = ctypes.c_void_p
        self._malloc.argtypes = [ctypes.c_size_t]
        self._free = libc.free
        self._free.restype = None
        self._free.argtypes = [ctypes.c_void_p]
        count = TCACHE_COUNT * len(TCACHE_SIZES)
        self._reserve = (ctypes.c_void_p * count)()  # blocks of its own, made now
        self._taken = (ctypes.c_void_p * count)()  # (what the cache held, during a drain)
        self._take(self._reserve)

    def _take(self, into: ctypes.Array[ctypes.c_void_p]) -> None:
        i = 0
        for size in TCACHE_SIZES:
            for _ in range(TCACHE_COUNT):
                into[i] = self._malloc(size)  # (from the cache first, while it has one)
                i += 1

    def _release(self, blocks: ctypes.Array[ctypes.c_void_p]) -> None:
        for i in range(len(blocks)):
            self._free(blocks[i])
            blocks[i] = None

    def __call__(self) -> None:
        self._take(self._taken)  # the cached blocks (or fresh ones where it held fewer)
        self._release(self._reserve)  # the cache full again, of the reserve's blocks
        self._release(self._taken)  # the cache is full: to the free lists, within the trim's reach
        self._take(self._reserve)  # the reserve's blocks back out of the cache: it is empty


def serve_tidying_after_bursts(
    serve: Callable[[GracefulShutdown], Awaitable[None]],
) -> Callable[[GracefulShutdown], Awaitable[None]]:
    """``serve``, with a task that tidies up once a burst of work is over: every
    ``TIDY_PERIOD`` it reads the process's CPU time; in each of the first ``TIDY_ROUNDS``
    quiet periods after a busier one (below ``QUIET_SHARE`` of a core, or below
    ``QUIET_FRACTION`` of the busiest period since: the trickle after a burst, sessions
    ending and streams timing out, is quiet too), it runs a full collection (the
    cycles a burst left, which the rare full passes would otherwise keep for minutes; sessions
    and streams it opened end over the next seconds as their timeouts fire) and, on the C
    allocator, gives the free pages back to the system (``malloc_trim``).  Under load, and
    once tidied, it does nothing."""
    trim = _malloc_trim()

    async def serving(shutdown: GracefulShutdown) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_tidy, trim)
            await serve(shutdown)
            nursery.cancel_scope.cancel()

    return serving


async def _tidy(trim: Callable[[int], int] | None) -> None:
    left = 0  # quiet periods still to tidy in
    busiest = 0.0  # CPU seconds of the busiest period since the last tidying began
    before = time.process_time()
    while True:
        await trio.sleep(TIDY_PERIOD)
        now = time.process_time()
        used = now - before
        if used > max(QUIET_SHARE * TIDY_PERIOD, QUIET_FRACTION * busiest):
            left = TIDY_ROUNDS
            busiest = max(busiest, used)
        elif left:
            left -= 1
            if not left:  # (the next burst is measured on its own)
                busiest = 0.0
            _prune_deadlines()
            gc.collect()
            if trim is not None:
                trim(0)
            now = time.process_time()  # (the tidying itself is not work)
        before = now


def _prune_deadlines() -> bool:
    """Drop the records of deadlines no longer in force from trio's deadline heap (see the
    module's docstring): True if done, False if this trio keeps them elsewhere."""
    run = sys.modules.get("trio._core._run")
    runner = getattr(getattr(run, "GLOBAL_RUN_CONTEXT", None), "runner", None)
    prune = getattr(getattr(runner, "deadlines", None), "_prune", None)
    if not callable(prune):
        return False
    prune()
    return True
