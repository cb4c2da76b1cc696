"""``mcp-trio fuzz``: hypothesis-driven campaigns against MCP servers and clients, and
``mcp-trio fuzz replay FILE`` (needs the ``fuzz`` extra)."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: Seconds ``fuzz`` waits for an answer by default (``--timeout``).
ANSWER_TIMEOUT = 5.0

__all__ = ["command"]


class _Progress:
    """What a run shows while it goes: event lines (findings, campaigns done), and the current
    status (campaign, phase, examples, messages sent, findings) redrawn in place on a terminal,
    or as a plain line every ``every`` seconds otherwise (a CI log).  A heartbeat thread redraws
    the last status when nothing new came for ``every`` seconds (one slow example, a replay), with
    the seconds spent in the campaign, so the line never goes silent."""

    def __init__(self, stream: Any = None, every: float = 10.0) -> None:
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every = every if not self.tty else 0.2
        self.beat = every if not self.tty else 1.0
        self.last = 0.0
        self.drawn = False
        self.phase: str | None = None
        self.current: Any = None
        self.campaign_started = time.monotonic()
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the heartbeat (:meth:`finish` stops it)."""
        self.thread = threading.Thread(target=self._heartbeat, name="mcp-trio-fuzz-progress", daemon=True)
        self.thread.start()

    def _heartbeat(self) -> None:
        while not self.stopped.wait(self.beat):
            with self.lock:
                if self.current is not None and time.monotonic() - self.last >= self.beat:
                    self._draw(self.current)

    def event(self, line: str) -> None:
        with self.lock:
            self._clear()
            print(f"mcp-trio fuzz: {line}", file=self.stream, flush=True)

    def status(self, st: Any) -> None:
        with self.lock:
            now = time.monotonic()
            if self.current is None or (st.revision, st.campaign) != (
                self.current.revision,
                self.current.campaign,
            ):
                self.campaign_started = now
            self.current = st
            if now - self.last < self.every and st.phase == self.phase:
                return
            self._draw(st)

    def _draw(self, st: Any) -> None:
        now = time.monotonic()
        self.last, self.phase = now, st.phase
        text = (
            f"{st.revision} {st.campaign}: {st.phase}, {st.examples} examples, {st.messages} messages sent, "
            f"{st.findings} findings, {now - self.campaign_started:.0f} s"
        )
        if self.tty:
            self.stream.write("\r\x1b[K" + text[:200])
            self.stream.flush()
            self.drawn = True
        else:
            print(f"mcp-trio fuzz: {text}", file=self.stream, flush=True)

    def finish(self) -> None:
        """Stop the heartbeat and take the status line away (the summary follows)."""
        self.stopped.set()
        if self.thread is not None:
            self.thread.join(timeout=2.0)
        with self.lock:
            self._clear()

    def _clear(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.drawn = False


def _make_target(fuzzing: Any, args: argparse.Namespace, transport: str | None, feed: Any = None) -> Any:
    """The target the arguments name (None: none named); a ``--stdio`` one runs in the
    environment of the coverage ``feed`` when there is one."""
    if args.stdio:
        if feed is not None:
            target = fuzzing.StdioTarget(args.stdio)
            return fuzzing.StdioTarget(target.argv, env=feed.environ(os.environ))
        return fuzzing.StdioTarget(args.stdio)
    if args.http:
        return fuzzing.HttpTarget(args.http)
    if args.client:
        return fuzzing.ClientTarget(args.client, transport=transport or "http")
    return None


def _import_fuzzing() -> Any:
    try:
        from .. import fuzzing
    except ImportError as exc:
        print(f"mcp-trio fuzz: error: {exc}", file=sys.stderr)
        return None
    return fuzzing


def _cmd_fuzz_replay(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="mcp-trio fuzz replay", description="Send a saved finding's case again, on a fresh session."
    )
    parser.add_argument("file", help="a transcript written by 'mcp-trio fuzz'")
    parser.add_argument("--stdio", metavar="CMD", help="replay against this command instead")
    parser.add_argument("--http", metavar="URL", help="replay against this endpoint instead")
    parser.add_argument(
        "--client", metavar="CMD", help="replay a client transcript against this client instead"
    )
    parser.add_argument(
        "--client-transport",
        choices=("http", "stdio"),
        default=None,
        help="with --client: how the client reaches the fuzzing server (default: the transcript's)",
    )
    parser.add_argument("--timeout", type=float, default=None, help="seconds to wait for answers")
    parser.add_argument("--out", metavar="FILE", help="write the new transcript here")
    args = parser.parse_args(argv)
    fuzzing = _import_fuzzing()
    if fuzzing is None:
        return 2
    import json

    try:
        saved = fuzzing.load_transcript(args.file)
        transport = args.client_transport or saved.get("target", {}).get("transport", "http")
        target = _make_target(fuzzing, args, transport)
        transcript, violations = fuzzing.replay(args.file, target=target, timeout=args.timeout)
    except (OSError, ValueError, KeyError) as exc:
        print(f"mcp-trio fuzz replay: error: {exc}", file=sys.stderr)
        return 2
    except fuzzing.runner.TargetError as exc:
        print(f"mcp-trio fuzz replay: error: {exc}", file=sys.stderr)
        return 2
    if args.out:
        Path(args.out).write_text(json.dumps(transcript, indent=1, ensure_ascii=False) + "\n")
    wanted = (saved.get("finding") or {}).get("key")
    for v in violations:
        print(f"{v.key} [{v.severity}]: {v.message}")
    if not violations:
        print("no violation")
    if wanted is not None:
        reproduced = any(v.key == wanted for v in violations)
        print(f"{'reproduced' if reproduced else 'did not reproduce'}: {wanted}", file=sys.stderr)
        return 1 if reproduced else 0
    return 1 if violations else 0


def command(argv: Sequence[str]) -> int:
    if argv[:1] == ["replay"]:
        return _cmd_fuzz_replay(argv[1:])
    from ..types import _versions

    parser = argparse.ArgumentParser(
        prog="mcp-trio fuzz",
        description="Fuzz an MCP server or client with hypothesis-driven campaigns; each violation is "
        "shrunk, replayed on a fresh session and saved as a transcript "
        "('mcp-trio fuzz replay FILE' runs it again).",
        epilog="Findings are graded by the rule they break: a violation (a MUST) fails the run, a "
        "deviation (a SHOULD) only with --strict, a note (a judgement call) or a flaky finding (not "
        "seen again on replay) never. Exit status: 0 passed, 1 failed, 2 the target cannot start or "
        "died outside a finding (or bad arguments), 130 interrupted (the partial report is written).",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--stdio", metavar="CMD", help='launch this server command ("CMD ARGS")')
    where.add_argument("--http", metavar="URL", help="a running Streamable HTTP endpoint")
    where.add_argument(
        "--client",
        metavar="CMD",
        help='launch this client ("CMD ARGS"; the URL of a fuzzing '
        "server on 127.0.0.1 is appended, or with --client-transport stdio the command of a "
        "server to launch; an argument {server} is replaced instead), once per example",
    )
    parser.add_argument(
        "--client-transport",
        choices=("http", "stdio"),
        default="http",
        help="--client: Streamable HTTP (default) or stdio",
    )
    parser.add_argument(
        "--revision",
        action="append",
        choices=_versions.SUPPORTED_VERSIONS,
        help="revision to speak (repeatable; default 2025-11-25)",
    )
    parser.add_argument(
        "--campaign",
        action="append",
        choices=("valid", "invalid", "lifecycle", "capabilities", "http", "stateful", "client"),
        help="campaign to run (repeatable; default: valid, invalid, lifecycle, capabilities, "
        "and http with --http; client with --client; stateful only when asked)",
    )
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0)")
    parser.add_argument(
        "--max-examples",
        type=int,
        default=None,
        metavar="N",
        help="generated examples per campaign and revision (default 100; with --time, whichever comes "
        "first; the corpus of known-bad inputs comes on top)",
    )
    parser.add_argument(
        "--time",
        type=float,
        default=None,
        metavar="SECONDS",
        help="wall time per campaign and revision (shrinking and replay included)",
    )
    parser.add_argument("--strict", action="store_true", help="deviations (SHOULDs broken) fail the run too")
    parser.add_argument("--junit", metavar="FILE", help="also write the findings as JUnit XML")
    parser.add_argument("--sarif", metavar="FILE", help="also write the findings as SARIF 2.1.0")
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help=f"seconds to wait for answers (default {ANSWER_TIMEOUT:g}, and with --coverage python "
        "as many times more as a recording process may be slower: 4)",
    )
    parser.add_argument(
        "--max-findings",
        type=int,
        default=5,
        metavar="N",
        help="stop a campaign's generated search after N findings (default 5; the summary says when it "
        "did; the corpus of known-bad inputs runs whole)",
    )
    parser.add_argument(
        "--shrink-time",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="seconds of shrinking per finding (default 20)",
    )
    parser.add_argument(
        "--run-time",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="--client: seconds one client run may take before it counts as hung (default 30)",
    )
    parser.add_argument(
        "--max-rss-growth",
        type=float,
        default=200.0,
        metavar="MB",
        help="--stdio: note a target whose resident memory grows by more than this in a campaign "
        "(default 200; sampled from /proc, Linux only)",
    )
    parser.add_argument(
        "--max-fd-growth",
        type=int,
        default=100,
        metavar="N",
        help="--stdio: note a target whose open file descriptors grow by more than this (default 100)",
    )
    parser.add_argument(
        "--all-revisions",
        action="store_true",
        help="fuzz every --revision even if the server's initialize answer names another",
    )
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="PROBE",
        help="leave out a probe kind, e.g. deep_nesting (repeatable)",
    )
    parser.add_argument(
        "--coverage",
        choices=("python", "node", "auto"),
        default=None,
        help="--stdio: record what the target process runs (Python lines and arcs, Node blocks) over "
        "a side channel, steer the search toward inputs that reach new code, and report the code "
        "each campaign reached; auto tells Python from Node by the command",
    )
    parser.add_argument(
        "--coverage-include",
        action="append",
        default=[],
        metavar="PATH",
        help="--coverage: count only code in files under this path prefix (repeatable; default: "
        "every file but Python's standard library, every file: script of Node's)",
    )
    parser.add_argument(
        "--no-steer",
        action="store_true",
        help="--coverage: report the code each campaign reached without steering the search by it "
        "(a baseline to compare with)",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        default="fuzz-results",
        help="where the report, summary and transcripts go (default ./fuzz-results)",
    )
    args = parser.parse_args(argv)
    if args.max_findings < 1:
        parser.error("--max-findings must be at least 1")
    if args.max_examples is not None and args.max_examples < 1:
        parser.error("--max-examples must be at least 1")
    if args.time is not None and args.time <= 0:
        parser.error("--time must be more than 0 seconds")
    if (args.coverage or args.coverage_include) and not args.stdio:
        parser.error("--coverage is for --stdio targets only")
    if (args.coverage_include or args.no_steer) and not args.coverage:
        parser.error("--coverage-include and --no-steer need --coverage")
    fuzzing = _import_fuzzing()
    if fuzzing is None:
        return 2
    feed = None
    try:
        if args.coverage:
            argv = fuzzing.StdioTarget(args.stdio).argv
            feed = fuzzing.coverage_feed(args.coverage, argv, args.coverage_include)
        if args.timeout is None:  # (a recording process answers slower: no finding)
            args.timeout = ANSWER_TIMEOUT * (feed.slower if feed is not None else 1.0)
        target = _make_target(fuzzing, args, args.client_transport, feed)
    except ValueError as exc:
        print(f"mcp-trio fuzz: error: {exc}", file=sys.stderr)
        return 2
    campaigns = args.campaign or (
        ["client"]
        if args.client
        else ["valid", "invalid", "lifecycle", "capabilities", *(["http"] if args.http else [])]
    )
    progress = _Progress()
    cfg = fuzzing.FuzzConfig(
        target=target,
        revisions=args.revision or ["2025-11-25"],
        campaigns=campaigns,
        seed=args.seed,
        max_examples=args.max_examples if args.time is not None else (args.max_examples or 100),
        time_budget=args.time,
        timeout=args.timeout,
        skip_probes=frozenset(args.skip),
        max_findings=args.max_findings,
        run_time=args.run_time,
        shrink_time=args.shrink_time,
        all_revisions=args.all_revisions,
        out_dir=Path(args.out),
        progress=progress.event,
        status=progress.status,
        strict=args.strict,
        max_rss_growth=args.max_rss_growth,
        max_fd_growth=args.max_fd_growth,
        coverage=feed,
        steer=not args.no_steer,
    )
    status = error = None
    progress.start()
    try:
        stats = fuzzing.run(cfg)
    except fuzzing.Interrupted as exc:
        stats, status = exc.stats, 130
        progress.event("interrupted (Ctrl-C): the report holds what ran")
    except fuzzing.TargetFailed as exc:
        stats, status, error = exc.stats, 2, str(exc)
        progress.event(f"error: {exc}")
    finally:
        progress.finish()
        if feed is not None:
            feed.close()
    junit, sarif = (Path(p) if p else None for p in (args.junit, args.sarif))
    fuzzing.runner.write_ci_reports(cfg, stats, junit, sarif, error)
    print(fuzzing.runner.summary(cfg, stats, error), end="")
    print(f"mcp-trio fuzz: report in {Path(args.out) / 'report.json'}", file=sys.stderr)
    if status is not None:
        return status
    return 1 if fuzzing.runner.violations_found(stats, args.strict) else 0
