"""The campaign runner: hypothesis generates cases, the oracles judge them, findings replay.

A campaign (``valid``, ``invalid``, ``lifecycle``, ``capabilities``, ``http``, and
``client`` and ``capabilities`` for a client target; ``stateful`` runs in
:mod:`.stateful`) runs in rounds.
Each round is one hypothesis run (``database=None``, seeded) over a live
session with the target; the first violation found sets the round's focus,
hypothesis shrinks the case while that violation persists (within a time
budget), and the smallest failing case is then replayed on a fresh session
(a new process, a new HTTP session).  Only a case that shows the violation
again becomes a finding; it is saved as a JSON transcript that
:func:`replay` (``mcp-trio fuzz replay FILE``) runs again.  The next round
ignores the violations already found, so one campaign can report several
(at most ``FuzzConfig.max_findings``).  Before the first round, each case of the campaign's
corpus of known-bad inputs runs once (every malformed shape the oracles know; for ``http``,
every probe, the costly one of requests abandoned by their client last; for a client, every
malformed plan shape).  A case showing a violation already found is listed by its finding
(:attr:`~._findings.Finding.examples`): one finding per cause.  A
campaign the target cannot take (a revision it does not speak) is skipped; one stopped by an
error of the fuzzer itself is marked aborted; the summary shows both.

This module runs the campaigns and replays transcripts; the parts it puts together live
below it: the server campaigns in :mod:`._server_campaign` (over a :class:`~._session.Session`,
with the HTTP probes of :mod:`._http_probes`), the client ones in :mod:`.client`, the state
machine in :mod:`.stateful`, and the configuration, stats, findings, transcripts and report in
:mod:`._findings` (their names are re-exported here).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from hypothesis import event, given, seed, target

from ..types import _versions
from . import client as cli
from . import driver as drv
from . import oracles as orc
from ._findings import TRANSCRIPT_FORMAT as TRANSCRIPT_FORMAT
from ._findings import CampaignStats as CampaignStats
from ._findings import Finding as Finding
from ._findings import FuzzConfig as FuzzConfig
from ._findings import Hunt as Hunt
from ._findings import Status as Status
from ._findings import TargetDown as TargetDown
from ._findings import TargetError as TargetError
from ._findings import (
    add_example,
    campaign_deadline,
    keep_unreplayed,
    offending_payload,
    record_resources,
    search_settings,
    within_budget,
)
from ._findings import keep_if_replayed as keep_if_replayed
from ._findings import load_transcript as load_transcript
from ._findings import save_transcript as save_transcript
from ._findings import stateful_transcript as stateful_transcript
from ._findings import summary as summary
from ._findings import violations_found as violations_found
from ._findings import write_report as write_report
from ._http_probes import HTTP_CASES as HTTP_CASES
from ._http_probes import HTTP_PROBES as HTTP_PROBES
from ._reports import junit_xml as junit_xml
from ._reports import sarif as sarif
from ._reports import write_ci_reports as write_ci_reports
from ._server_campaign import _replay_payloads, server_hunt
from ._session import STARTUP_TIMEOUT as STARTUP_TIMEOUT
from ._session import CaseResult as CaseResult
from ._session import Session as Session
from .client import ClientTarget
from .stateful import run_stateful, run_steps

__all__ = [
    "CAMPAIGNS",
    "Finding",
    "FuzzConfig",
    "Interrupted",
    "Session",
    "TargetFailed",
    "load_transcript",
    "replay",
    "run",
]

CAMPAIGNS = ("valid", "invalid", "lifecycle", "capabilities", "http", "stateful", "client")


class _Found(Exception):
    pass


class Interrupted(Exception):
    """The run was stopped by Ctrl-C (SIGINT); ``stats`` holds what ran (the report is written)."""

    def __init__(self, stats: list[CampaignStats]) -> None:
        super().__init__("interrupted")
        self.stats = stats


class TargetFailed(Exception):
    """The target cannot start or died outside a finding; ``stats`` holds what ran (the report is
    written)."""

    def __init__(self, message: str, stats: list[CampaignStats]) -> None:
        super().__init__(message)
        self.stats = stats


def run(cfg: FuzzConfig) -> list[CampaignStats]:
    """Every campaign of ``cfg`` against every revision; writes the report when ``out_dir`` is set.

    Raises :class:`Interrupted` on Ctrl-C and :class:`TargetFailed` when the target cannot start
    or dies outside a case, each after writing the partial report."""
    stats: list[CampaignStats] = []
    failure: BaseException | None = None
    try:
        preflight(cfg)
        for revision in cfg.revisions:
            for campaign in cfg.campaigns:
                stats.append(CampaignStats(revision, campaign))
                run_campaign(cfg, revision, campaign, stats[-1])
    except KeyboardInterrupt:
        if stats:
            stats[-1].interrupted = True
        failure = Interrupted(stats)
    except TargetDown as exc:
        failure = TargetFailed(str(exc), stats)
    if cfg.out_dir is not None:
        write_report(cfg, stats, str(failure) if isinstance(failure, TargetFailed) else None)
    if failure is not None:
        raise failure
    return stats


def preflight(cfg: FuzzConfig) -> None:
    """Raise :class:`TargetDown` unless a server target starts and answers its first message
    (``initialize``, or ``server/discover`` in a stateless revision); an answer that refuses is
    fine here (the campaigns skip a revision the target does not speak)."""
    if isinstance(cfg.target, ClientTarget) or not cfg.revisions:
        return
    try:
        sess = Session(cfg.target, cfg.revisions[0], timeout=cfg.timeout)
    except TargetDown:
        raise
    except Exception:  # refused, or the fuzzer's own error: the campaigns say which
        return
    try:
        if sess.stateless and not sess.discovers() and not sess.conn.received:
            raise TargetDown(f"the target gave no answer to server/discover: {sess.why_silent()}")
    finally:
        sess.close()


def run_campaign(
    cfg: FuzzConfig, revision: str, campaign: str, stats: CampaignStats | None = None
) -> CampaignStats:
    stats = stats or CampaignStats(revision, campaign)
    started = time.monotonic()
    sent = drv.messages_sent()
    skipped = _skip_reason(cfg, revision, campaign)
    if skipped:
        stats.skipped = skipped
        return stats
    if cfg.coverage is not None:
        cfg.coverage.begin_campaign()
    try:
        _run_rounds(cfg, revision, campaign, stats, started)
    except TargetDown:
        raise
    except TargetError as exc:
        stats.skipped = str(exc)
        cfg.progress(f"{revision} {campaign}: {exc}")
    except Exception as exc:  # a fuzzer that cannot go on must say so, not vanish from the report
        stats.aborted = f"{type(exc).__name__}: {exc}"
        cfg.progress(f"{revision} {campaign}: ABORTED: {stats.aborted}")
    finally:
        stats.seconds = time.monotonic() - started
        stats.messages = drv.messages_sent() - sent
        if cfg.coverage is not None:
            stats.coverage = {**cfg.coverage.to_json(), "steered": cfg.steer}
    cfg.progress(
        f"{revision} {campaign}: done, {stats.examples} examples, {stats.messages} messages, "
        f"{len(stats.findings)} findings in {stats.seconds:.1f} s"
    )
    return stats


def _run_rounds(cfg: FuzzConfig, revision: str, campaign: str, stats: CampaignStats, started: float) -> None:
    if campaign == "stateful":
        run_stateful(cfg, revision, stats)
        return
    if cfg.target.kind == "client":
        hunt = cli.client_hunt(cfg, revision, stats, campaign, campaign_deadline(cfg, started))
    else:
        hunt = server_hunt(cfg, revision, campaign, stats)
    try:
        _search(cfg, revision, campaign, stats, hunt, started)
        record_resources(cfg, stats, hunt)
    finally:
        hunt.reset()


def _skip_reason(cfg: FuzzConfig, revision: str, campaign: str) -> str | None:
    kind = cfg.target.kind
    if campaign == "client" and kind != "client":
        return "the client campaign is for --client targets only"
    if kind == "client" and campaign not in ("client", "capabilities"):
        return f"the {campaign} campaign is for servers"
    if kind == "client" and campaign == "capabilities" and _versions.is_stateless(revision):
        return (
            f"{revision}: the client capabilities campaign needs server-to-client requests, which "
            f"{revision} sends only inside InputRequiredResult; not written yet"
        )
    if campaign == "http" and kind != "http":
        return "the http campaign needs an --http target"
    if campaign in ("lifecycle", "stateful") and _versions.is_stateless(revision):
        return f"{revision} has no initialize handshake"
    return None


def _search(
    cfg: FuzzConfig,
    revision: str,
    campaign: str,
    stats: CampaignStats,
    hunt: Hunt,
    started: float,
    found: set[str] | None = None,
) -> None:
    """The known-bad corpus first (each case once), then rounds of hypothesis runs: find a new
    violation (not in ``found``), shrink it, keep it if it replays.  Everything stops at the
    campaign's deadline (``time_budget`` after ``started``)."""
    found = set(found or ())
    deadline = campaign_deadline(cfg, started)

    def budget_left() -> bool:
        return within_budget(cfg, stats, started)

    def show(phase: str) -> None:
        cfg.status(
            Status(
                revision,
                campaign,
                phase,
                stats.examples,
                drv.messages_sent() - sent,
                len(stats.findings),
            )
        )

    def confirm(key: str, payloads: list[bytes], notes: list[str], seen: list[orc.Violation]) -> None:
        found.add(key)
        found.update(
            _confirm(cfg, revision, campaign, stats, hunt, key, (payloads, notes, seen), deadline, show)
        )

    def seen_before(payloads: list[bytes], notes: list[str], violations: list[orc.Violation]) -> None:
        """A case that shows a violation already found: another case of its cause, listed by
        that finding rather than dropped (one finding per cause)."""
        if found.intersection(v.key for v in violations):
            add_example(stats, violations, found, offending_payload(hunt.sketch(payloads, notes)))

    sent = drv.messages_sent()
    # The corpus runs whole, each case once, within the time budget only: neither max_examples
    # (which counts the generated examples) nor max_findings cuts it short (each of its cases is
    # a different known-bad input).
    for case in hunt.corpus:
        if time.monotonic() >= deadline:
            break
        stats.examples += 1
        stats.corpus += 1
        show("corpus")
        payloads, notes, violations = hunt.execute(case)
        if cfg.coverage is not None:
            cfg.coverage.collect()
        seen_before(payloads, notes, violations)
        keys = {v.key for v in violations} - found
        if keys:
            key = sorted(keys)[0]
            shapes = ", ".join(sorted(set(notes)))
            shown = f"known-bad input {shapes}" if shapes else "known-bad input"
            cfg.progress(f"{revision} {campaign}: violation {key} ({shown})")
            confirm(key, payloads, notes, violations)
    round_no = 0
    # (with a time budget, rounds go on until the time is up; an example count alone ends them)
    while (
        budget_left()
        and len(stats.findings) < cfg.max_findings
        and (round_no < 50 or cfg.time_budget is not None)
    ):
        round_no += 1
        focus: list[str] = []
        best: list[Any] = []  # [case, payloads, notes, violations]
        shrink_started: list[float] = []
        errors: list[BaseException] = []
        left = (cfg.max_examples or 0) - (stats.examples - stats.corpus)
        chunk = min(25, max(1, left)) if cfg.time_budget is not None else max(1, left)
        if cfg.max_examples is None:
            chunk = 25

        @search_settings(chunk, targeted=cfg.coverage is not None and cfg.steer)
        @seed(cfg.seed * 1000 + round_no)
        @given(hunt.strategy)
        def test(case: Any) -> None:
            if errors:  # the campaign is over: let hypothesis finish without running anything
                raise _Found
            now = time.monotonic()
            over = now >= deadline  # (wall time)
            if best and shrink_started and (now - shrink_started[0] > cfg.shrink_time or over):
                if case == best[0]:
                    raise _Found
                return
            if not focus and not budget_left():
                return
            if not focus:
                stats.examples += 1
                show("generating")
            try:
                payloads, notes, violations = hunt.execute(case)
            except Exception as exc:  # no session at all, or the fuzzer's own failure: stop, visibly
                errors.append(exc)
                raise _Found from exc
            if not focus:
                seen_before(payloads, notes, violations)
                steer(cfg)
            keys = {v.key for v in violations} - found
            if not focus and keys:
                focus.append(sorted(keys)[0])
                shrink_started.append(time.monotonic())
                cfg.progress(f"{revision} {campaign}: violation {focus[0]}; shrinking")
            if focus:
                show("shrinking")
            if focus and focus[0] in keys:
                if not best or _size(payloads) <= _size(best[1]):
                    best[:] = [case, payloads, notes, violations]
                raise _Found

        try:
            test()
        except KeyboardInterrupt:  # keep the finding being shrunk: the smallest case so far
            if focus and best:
                keep_unreplayed(
                    cfg, stats, revision, campaign, best[3], focus[0], hunt.sketch(best[1], best[2])
                )
            raise
        except Exception:  # _Found (or hypothesis' flaky report): the case is in ``best``
            pass
        if errors:
            raise errors[0]
        if not focus:
            continue
        confirm(focus[0], best[1], best[2], best[3])
    if len(stats.findings) >= cfg.max_findings:
        stats.capped = True


def steer(cfg: FuzzConfig) -> None:
    """With coverage feedback: tell hypothesis how many locations the example just run reached
    that the campaign had not (``target``: the search mutates the examples that scored best),
    and whether it reached any (``event``)."""
    if cfg.coverage is None or not cfg.steer:
        return
    new = cfg.coverage.collect(wait=True)
    target(float(new), label="new coverage")
    event("new coverage" if new else "no new coverage")


def _confirm(
    cfg: FuzzConfig,
    revision: str,
    campaign: str,
    stats: CampaignStats,
    hunt: Hunt,
    key: str,
    case: tuple[list[bytes], list[str], list[orc.Violation]],
    deadline: float,
    show: Callable[[str], None],
) -> set[str]:
    """Replay a case that showed ``key`` on a fresh session, drop the messages it does not need
    (until ``deadline``), and keep it as a finding (flaky when the replay does not show it).
    Returns the other keys its replay showed: symptoms of the same cause, listed in the finding
    and not reported again.  Ctrl-C keeps the smallest case so far, unreplayed."""
    payloads, notes, seen = case
    held: tuple[list[bytes], list[str]] = (payloads, notes)
    try:
        show("replaying")  # (on a fresh session: the campaign's own goes on unless it died or wedged)
        transcript, violations = hunt.replay(payloads, notes)
        if any(v.key == key for v in violations) and len(payloads) > 1:
            show("minimizing")

            def keep(fewer: list[bytes], fewer_notes: list[str]) -> None:
                nonlocal held
                held = (fewer, fewer_notes)
                show("minimizing")

            payloads, transcript, violations = drop_unneeded(
                hunt,
                key,
                payloads,
                notes,
                (transcript, violations),
                min(deadline, time.monotonic() + cfg.shrink_time),
                keep,
            )
    except KeyboardInterrupt:
        keep_unreplayed(cfg, stats, revision, campaign, seen, key, hunt.sketch(held[0], held[1]))
        raise
    finding = keep_if_replayed(
        cfg, stats, revision, campaign, key, violations, len(payloads), partial(dict, transcript)
    )
    return set(finding.also)


def drop_unneeded(
    hunt: Hunt,
    key: str,
    payloads: list[bytes],
    notes: list[str],
    replayed: tuple[dict[str, Any], list[orc.Violation]],
    deadline: float,
    keep: Callable[[list[bytes], list[str]], None] = lambda payloads, notes: None,
) -> tuple[list[bytes], dict[str, Any], list[orc.Violation]]:
    """The second shrinking pass, over the transcript: drop one message of the case at a time and
    keep the drop when a replay on a fresh session shows ``key`` again, until no message can go
    (at least one stays) or ``deadline`` (``time.monotonic()``) passes.  ``replayed`` is the
    (transcript, violations) of the whole case; returns the case left and its replay's.  ``keep``
    hears of every drop kept."""
    notes = [*notes, *[""] * (len(payloads) - len(notes))][: len(payloads)]
    i = 0
    while i < len(payloads) and len(payloads) > 1 and time.monotonic() < deadline:
        fewer, fewer_notes = payloads[:i] + payloads[i + 1 :], notes[:i] + notes[i + 1 :]
        transcript, violations = hunt.replay(fewer, fewer_notes)
        if any(v.key == key for v in violations):
            payloads, notes, replayed = fewer, fewer_notes, (transcript, violations)
            keep(payloads, notes)
        else:
            i += 1
    return payloads, *replayed


def _size(payloads: Sequence[bytes]) -> tuple[int, int]:
    return len(payloads), sum(len(p) for p in payloads)


def target_from(description: dict[str, Any]) -> drv.StdioTarget | drv.HttpTarget | ClientTarget:
    if description.get("kind") == "stdio":
        return drv.StdioTarget(description["command"], cwd=description.get("cwd"))
    if description.get("kind") == "http":
        return drv.HttpTarget(description["url"])
    if description.get("kind") == "client":
        return ClientTarget.from_description(description)
    raise ValueError(f"unknown target {description!r}")


def replay(
    path: str | Path, *, target: drv.StdioTarget | drv.HttpTarget | None = None, timeout: float | None = None
) -> tuple[dict[str, Any], list[orc.Violation]]:
    """Send a transcript's case again on a fresh session; (new transcript, violations)."""
    data = load_transcript(path)
    if "resources" in data:
        raise ValueError(
            f"{path} is a resource growth finding: it has no case to replay (run the campaign again; "
            "the file holds the samples)"
        )
    if data.get("campaign") == "client" or data.get("target", {}).get("kind") == "client":
        return cli.replay_client(data, target=target, timeout=timeout)
    if data.get("campaign") == "stateful":
        cfg = FuzzConfig(target or target_from(data["target"]), timeout=timeout or data.get("timeout", 5.0))
        violations, runner = run_steps(cfg.target, data["revision"], data["steps"], cfg.timeout)
        return stateful_transcript(cfg, data["revision"], data["steps"], violations, runner), violations
    payloads = [drv.decode_bytes(c) for c in data["case"]]
    notes = [c.get("note", "") for c in data["case"]]
    chosen = target or target_from(data["target"])
    if isinstance(chosen, ClientTarget):
        raise ValueError(f"{path} is a server transcript; replay it against a server, not a client")
    return _replay_payloads(
        chosen, data["revision"], data["campaign"], payloads, notes, timeout or data.get("timeout", 5.0)
    )
