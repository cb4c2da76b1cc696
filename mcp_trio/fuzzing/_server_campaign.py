"""The campaigns against a server target (``valid``, ``invalid``, ``lifecycle``,
``capabilities``, ``http``): the :class:`~._findings.Hunt` each plugs into the search, and
the replay of a case on a fresh session, which makes the finding's transcript.

``lifecycle`` and ``http`` take a fresh session for every example (``lifecycle`` without the
handshake); the others keep one session (one process on stdio) while the target stays alive
and answers the ping sent behind each case, and start another only when it died or wedged.
``invalid`` runs its corpus of known-bad inputs first (:func:`~.strategies.known_bad`),
``http`` every probe once; in ``invalid`` the missing answers get only :data:`EAGER_GRACE`
after the ping behind the case is answered (the replay waits the full timeout).  ``capabilities`` asks
the target what it advertises first and sends what it did not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from . import driver as drv
from . import oracles as orc
from ._findings import TRANSCRIPT_FORMAT, CampaignStats, FuzzConfig, Hunt, TargetError
from ._http_probes import ABANDON_PROBE, HTTP_CASES, _http_case
from ._resources import ResourceWatch
from ._session import Session
from .strategies import capability_cases, cases, known_bad, unadvertised_methods

__all__ = ["server_hunt"]

#: ``invalid`` campaign, stdio: seconds the answers still missing get once the ping sent behind
#: the case is answered.  A malformed message is answered at once or never; a replay on a fresh
#: session, with the full ``--timeout``, decides whether a missing answer is a finding.
EAGER_GRACE = 0.5


def server_hunt(cfg: FuzzConfig, revision: str, campaign: str, stats: CampaignStats) -> Hunt:
    handshake = campaign != "lifecycle"
    fresh_each = campaign in ("lifecycle", "http")
    live: list[Session] = []
    watch = ResourceWatch(cfg.max_rss_growth, cfg.max_fd_growth) if cfg.target.kind == "stdio" else None

    def pid() -> int | None:
        proc = getattr(live[0].conn, "proc", None) if live else None
        return proc.pid if proc is not None and proc.poll() is None else None

    def session() -> Session:
        if live and (fresh_each or not live[0].conn.alive() or live[0].wedged):
            live.pop().close()
        if not live:
            sess = Session(cfg.target, revision, handshake=handshake, timeout=cfg.timeout)
            if campaign == "invalid":
                sess.grace = EAGER_GRACE
            live.append(sess)
            stats.sessions += 1
            if handshake and sess.negotiated != revision and not cfg.all_revisions:
                raise TargetError(
                    f"the target does not speak {revision} (its initialize answer names "
                    f"{sess.negotiated}); --all-revisions fuzzes it anyway"
                )
            if sess.stateless and stats.sessions == 1 and not cfg.all_revisions and not sess.discovers():
                raise TargetError(
                    f"the target does not speak {revision} (server/discover does not list "
                    "it); --all-revisions fuzzes it anyway"
                )
            if campaign == "capabilities":
                _learn_capabilities(sess)
        return live[0]

    def drop() -> None:
        while live:
            live.pop().close()

    if campaign == "http":
        strategy: st.SearchStrategy[Any] = st.lists(st.sampled_from(HTTP_CASES), min_size=1, max_size=3)
    elif campaign == "capabilities":
        try:  # (the strategy depends on what the target advertises: ask it first)
            strategy = capability_cases(revision, _capability_methods(session(), revision))
        except BaseException:
            drop()  # no Hunt owns the session yet
            raise
    else:
        strategy = cases(revision, campaign)
    corpus: list[Any] = []
    if campaign == "invalid":
        corpus = known_bad(revision)
    elif campaign == "http":  # every probe once, the costly abandoned-requests one last
        corpus = [[probe] for probe in [*HTTP_CASES, ABANDON_PROBE]]
    skip = cfg.skip_probes
    if campaign == "http":
        strategy = strategy.filter(lambda case: not skip.intersection(case)) if skip else strategy
        corpus = [case for case in corpus if not skip.intersection(case)]
    else:

        def allowed(case: Any) -> bool:
            return not any(i.note.split(":")[0] in skip or i.note in skip for i in case)

        strategy = strategy.filter(allowed) if skip else strategy
        corpus = [case for case in corpus if allowed(case)]

    def execute(case: Any) -> tuple[list[bytes], list[str], list[orc.Violation]]:
        sess = session()
        if campaign == "http":
            violations = [v for probe in case for v in _http_case(sess, probe)]
            result = sess.run_case([])  # liveness
            return [p.encode() for p in case], list(case), violations + result.violations
        payloads = sess.renumber(case)
        result = sess.run_case(payloads, [i.note for i in case])
        if watch is not None:
            watch.see(pid())
        return payloads, result.notes, result.violations

    def replay_best(payloads: list[bytes], notes: list[str]) -> tuple[dict[str, Any], list[orc.Violation]]:
        return _replay_payloads(cfg.target, revision, campaign, payloads, notes, cfg.timeout, seed=cfg.seed)

    def sketch(payloads: list[bytes], notes: list[str]) -> dict[str, Any]:
        return _transcript(cfg.target, revision, campaign, payloads, notes, cfg.timeout, cfg.seed)

    return Hunt(strategy, execute, replay_best, drop, watch, pid, corpus, sketch)


def _learn_capabilities(sess: Session) -> None:
    """Make ``sess`` judge capability use: a handshake revision has the server's capabilities
    from ``initialize``; a stateless one asks ``server/discover`` for them."""
    sess.judge_capabilities = True
    if sess.stateless and not sess.server_capabilities:
        sess.discovers()


def _capability_methods(sess: Session, revision: str) -> list[str]:
    """What the ``capabilities`` campaign can send: requests the server's answer did not
    advertise, and notifications gated by client capabilities the fuzzer never declares
    (its handshake declares none)."""
    methods = unadvertised_methods(revision, sess.server_capabilities, {})
    if not methods:
        raise TargetError(f"the target advertises every capability {revision} gates: nothing to violate")
    return methods


def _replay_payloads(
    target: drv.StdioTarget | drv.HttpTarget,
    revision: str,
    campaign: str,
    payloads: Sequence[bytes],
    notes: Sequence[str],
    timeout: float,
    seed: int | None = None,
) -> tuple[dict[str, Any], list[orc.Violation]]:
    sess = Session(target, revision, handshake=campaign != "lifecycle", timeout=timeout)
    try:
        if campaign == "capabilities":
            _learn_capabilities(sess)
        if campaign == "http":
            violations = [v for probe in notes for v in _http_case(sess, probe)]
            violations += sess.run_case([]).violations
        else:
            violations = sess.run_case(list(payloads), list(notes)).violations
    finally:
        sess.close()
    conn = sess.conn
    transcript = {
        **_transcript(target, revision, campaign, payloads, notes, timeout, seed),
        "negotiated": sess.negotiated,
        **({"server_capabilities": sess.server_capabilities} if campaign == "capabilities" else {}),
        "violations": [v.to_json() for v in violations],
        "events": conn.events,
        "exit_code": conn.exit_code(),
        "stderr": conn.stderr_tail()[-4000:],
    }
    return transcript, violations


def _transcript(
    target: drv.StdioTarget | drv.HttpTarget,
    revision: str,
    campaign: str,
    payloads: Sequence[bytes],
    notes: Sequence[str],
    timeout: float,
    seed: int | None,
) -> dict[str, Any]:
    """What a transcript says of a case before it is replayed: target, revision, campaign, the case."""
    return {
        "format": TRANSCRIPT_FORMAT,
        "target": target.describe(),
        "revision": revision,
        "campaign": campaign,
        "handshake": campaign != "lifecycle",
        "timeout": timeout,
        **({"seed": seed} if seed is not None else {}),
        "case": [
            {**drv.encode_bytes(p), "note": n}
            for p, n in zip(payloads, [*notes, *[""] * len(payloads)], strict=False)
        ],
        "violations": [],
    }
