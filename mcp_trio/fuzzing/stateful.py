"""The ``stateful`` campaign: long sequences against one server, as a hypothesis state machine.

:class:`ServerMachine` (a ``RuleBasedStateMachine``) opens a session with a
handshake variant (the revision, another one, a version that does not exist,
odd capabilities), then runs rules in any order and number: concurrent
requests of different methods, a request cancelled right behind it, two
requests sharing one progress token, a second ``initialize``, pings, and the
end of the session (``DELETE`` over HTTP, after which the old session id must
get 404; a new process over stdio) followed by a fresh one.  Every rule is
judged by the same oracles as the other campaigns (through
:meth:`~mcp_trio.fuzzing._session.Session.run_case`), and the handshake by
``version-negotiation``.

Each rule is recorded as a plain-JSON *step*; the steps of the smallest failing
run are replayed on a fresh session (:func:`run_steps`) and, when the violation
shows again, saved in the transcript, so ``mcp-trio fuzz replay`` runs them again.
"""

from __future__ import annotations

import json
import time
from functools import partial
from typing import Any, ClassVar

from hypothesis import seed
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

from ..types import _versions
from . import driver as drv
from . import oracles as orc
from ._findings import (
    Status,
    TargetError,
    campaign_deadline,
    keep_if_replayed,
    keep_unreplayed,
    search_settings,
    stateful_transcript,
)
from ._http_probes import _http_case
from ._session import Session
from .strategies import client_methods, valid_message

__all__ = ["ServerMachine", "run_stateful", "run_steps"]

Step = dict[str, Any]
BOGUS_VERSIONS = ("1999-01-01", "2099-12-31", "")
CAPABILITY_VARIANTS: tuple[dict[str, Any], ...] = (
    {},
    {"roots": {"listChanged": True}},
    {"sampling": {}, "elicitation": {}},
    {"experimental": {"fuzz": {"x": [1]}}},
    {"unknown-capability": {}},
)
PROGRESS_METHODS = ("tools/list", "prompts/list", "resources/list", "ping")


class _Violated(AssertionError):
    pass


def _dump(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


# ------------------------------------------------------------- execution


def versions_spoken(target: Any, revision: str, timeout: float) -> dict[str, str]:
    """The versions the target says it speaks, each with how it said so: its answer to an
    ``initialize`` for ``revision`` and to one for a version that does not exist (the answer to
    that one is a version it supports, says lifecycle).  A server that answers a version it was not
    asked for is within its rights (it may not speak the one asked); it breaks the MUST only for a
    version it has said it speaks."""
    spoken: dict[str, str] = {}
    for asked in (revision, BOGUS_VERSIONS[0]):
        session = Session(target, revision, handshake=False, timeout=timeout)
        try:
            answer = session.initialize(asked)
        finally:
            session.close()
        _learn(spoken, asked, answer)
    return spoken


def _learn(spoken: dict[str, str], asked: str, answer: dict[str, Any] | None) -> None:
    result = answer.get("result") if answer is not None else None
    got = result.get("protocolVersion") if isinstance(result, dict) else None
    if isinstance(got, str) and got in _versions.SUPPORTED_VERSIONS:
        spoken.setdefault(got, f"it answered {got} to an initialize asking for {asked!r}")


class StepRunner:
    """Runs steps on live sessions; the machine and the replay share it.  ``spoken`` maps the
    versions the target has said it speaks to how it said so (:func:`versions_spoken`); every
    initialize answer adds to it."""

    def __init__(
        self, target: Any, revision: str, timeout: float, spoken: dict[str, str] | None = None
    ) -> None:
        self.target = target
        self.revision = revision
        self.timeout = timeout
        self.spoken = dict(spoken or {})
        self.session: Any = None
        self.events: list[dict[str, Any]] = []
        self.sessions = 0

    def close(self) -> None:
        if self.session is not None:
            self.events += self.session.conn.events
            self.session.close()
            self.session = None

    def run(self, step: Step) -> list[orc.Violation]:
        kind = step["rule"]
        if kind == "initialize":
            self.close()
            self.session = Session(self.target, self.revision, handshake=False, timeout=self.timeout)
            self.sessions += 1
            return self._initialize(step["version"], step["capabilities"])
        if kind == "end-session":
            if isinstance(self.session.conn, drv.HttpConnection):
                return _http_case(self.session, "delete-then-reuse")
            self.close()
            self.session = Session(self.target, self.revision, timeout=self.timeout)
            self.sessions += 1
            return []
        payloads = [p.encode("utf-8") for p in step["payloads"]]
        violations: list[orc.Violation] = self.session.run_case(payloads, [kind] * len(payloads)).violations
        return violations

    def _initialize(self, version: str, capabilities: dict[str, Any]) -> list[orc.Violation]:
        answer = self.session.initialize(version, capabilities)
        if answer is None:
            return [
                orc.Violation(
                    "alive",
                    f"no answer to initialize ({version!r}) within the timeout",
                    "no-initialize-answer",
                )
            ]
        result = answer.get("result")
        got = result.get("protocolVersion") if isinstance(result, dict) else None
        known = self.spoken.get(version)
        _learn(self.spoken, version, answer)
        if known is not None and got != version:
            return [
                orc.Violation(
                    "version-negotiation",
                    f"asked for {version}, which the server speaks ({known}), and got {got!r}: "
                    f"{orc._excerpt(answer)}",
                    "not-same",
                )
            ]
        if version in BOGUS_VERSIONS:
            if not isinstance(result, dict):
                return [
                    orc.Violation(
                        "version-negotiation",
                        f"asked for {version!r} and got an error instead "
                        f"of a version it supports: {orc._excerpt(answer)}",
                        "error",
                        severity="note",
                    )
                ]
            if got == version:
                return [
                    orc.Violation(
                        "version-negotiation",
                        f"asked for {version!r}, which no revision has, and the server claimed to speak it",
                        "echoed-bogus",
                    )
                ]
        return []


# --------------------------------------------------------------- machine


class ServerMachine(RuleBasedStateMachine):
    """Long sessions against one target; subclassed per campaign by :func:`machine_for`."""

    target: ClassVar[Any] = None
    revision: ClassVar[str] = ""
    timeout: ClassVar[float] = 5.0
    shrink_time: ClassVar[float] = 20.0
    deadline: ClassVar[float] = float("inf")  # after it, rules do nothing (the shrink budget is spent)
    budget_end: ClassVar[float] = float("inf")  # the campaign's deadline (--time): rules do nothing after it
    on_step: ClassVar[Any] = None  # called before every step (the progress line)
    failures: ClassVar[list[tuple[str, list[Step]]]] = []  # (violation key, steps) of every failing run
    known: ClassVar[set[str]] = set()  # keys already reported: ignored
    runs: ClassVar[int] = 0
    sessions: ClassVar[int] = 0
    spoken: ClassVar[dict[str, str]] = {}  # versions_spoken() of the target, learnt once

    def __init__(self) -> None:
        super().__init__()
        cls = type(self)
        cls.runs += 1
        if cls.failures and cls.deadline == float("inf"):
            cls.deadline = time.monotonic() + cls.shrink_time
        self.runner = StepRunner(self.target, self.revision, self.timeout, self.spoken)
        self.steps: list[Step] = []
        self.counter = 0

    def _fresh_id(self, like: Any) -> Any:
        self.counter += 1
        return 50_000 + self.counter if isinstance(like, int) else f"sm-{self.counter}"

    def _do(self, step: Step) -> None:
        if time.monotonic() > min(self.deadline, self.budget_end):
            return
        if self.on_step is not None:
            type(self).on_step()
        self.steps.append(step)
        keys = sorted({v.key for v in self.runner.run(step) if v.key not in self.known})
        if keys:
            type(self).failures.append((keys[0], list(self.steps)))
            raise _Violated(keys[0])

    @property
    def speaking(self) -> str:
        """The revision of the live session (a handshake variant may have negotiated another one):
        messages are generated for it, as a client would."""
        session = self.runner.session
        return session.negotiated if session is not None else self.revision

    def _request(self, method: str, draw: Any) -> dict[str, Any]:
        msg = dict(draw(valid_message(self.speaking, method)))
        msg["id"] = self._fresh_id(msg.get("id"))
        return msg

    @initialize(
        version=st.sampled_from(BOGUS_VERSIONS[:2])
        | st.sampled_from([v for v in _versions.SUPPORTED_VERSIONS if not _versions.is_stateless(v)]),
        capabilities=st.sampled_from(CAPABILITY_VARIANTS),
        same=st.booleans(),
    )
    def handshake(self, version: str, capabilities: dict[str, Any], same: bool) -> None:
        # half the sessions ask for the campaign's revision, the rest for a variant
        self._do(
            {
                "rule": "initialize",
                "version": self.revision if same else version,
                "capabilities": capabilities,
            }
        )

    @rule(data=st.data(), count=st.integers(2, 5))
    def concurrent_requests(self, data: st.DataObject, count: int) -> None:
        methods = data.draw(st.permutations(client_methods(self.speaking, "request")))[:count]
        msgs = [self._request(m, data.draw) for m in methods if m != "initialize"]
        self._do({"rule": "concurrent", "payloads": [_dump(m) for m in msgs]})

    @rule(data=st.data())
    def cancel_racing_the_answer(self, data: st.DataObject) -> None:
        methods = [m for m in client_methods(self.speaking, "request") if m not in ("initialize", "ping")]
        msg = self._request(data.draw(st.sampled_from(methods)), data.draw)
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": msg["id"], "reason": "fuzz"},
        }
        self._do({"rule": "cancel-race", "payloads": [_dump(msg), _dump(cancel)]})

    @rule(token=st.integers(0, 3) | st.sampled_from(["t", ""]), data=st.data())
    def progress_token_reused(self, token: Any, data: st.DataObject) -> None:
        methods = [m for m in PROGRESS_METHODS if m in _versions.methods_for(self.speaking)]
        msgs = []
        for method in data.draw(st.lists(st.sampled_from(methods), min_size=2, max_size=3)):
            msgs.append(
                {
                    "jsonrpc": "2.0",
                    "id": self._fresh_id(0),
                    "method": method,
                    "params": {"_meta": {"progressToken": token}},
                }
            )
        self._do({"rule": "progress-reuse", "payloads": [_dump(m) for m in msgs]})

    @rule(version=st.sampled_from([*BOGUS_VERSIONS[:1], *_versions.SUPPORTED_VERSIONS]))
    def second_initialize(self, version: str) -> None:
        msg = {
            "jsonrpc": "2.0",
            "id": self._fresh_id(""),
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "mcp-trio-fuzz", "version": "1"},
            },
        }
        self._do({"rule": "second-initialize", "payloads": [_dump(msg)]})

    @rule()
    def ping(self) -> None:
        self._do(
            {
                "rule": "ping",
                "payloads": [_dump({"jsonrpc": "2.0", "id": self._fresh_id(0), "method": "ping"})],
            }
        )

    @rule()
    def end_session_and_start_another(self) -> None:
        self._do({"rule": "end-session"})

    def teardown(self) -> None:
        type(self).sessions += self.runner.sessions
        self.runner.close()


def machine_for(
    target: Any, revision: str, timeout: float, shrink_time: float, spoken: dict[str, str] | None = None
) -> type[ServerMachine]:
    return type(
        "Machine",
        (ServerMachine,),
        {
            "target": target,
            "revision": revision,
            "timeout": timeout,
            "shrink_time": shrink_time,
            "failures": [],
            "known": set(),
            "spoken": dict(spoken or {}),
        },
    )


# ----------------------------------------------------------------- runner


def run_steps(
    target: Any, revision: str, steps: list[Step], timeout: float
) -> tuple[list[orc.Violation], StepRunner]:
    """Run recorded steps again on fresh sessions (after learning the versions the target speaks,
    as the campaign did); every violation seen."""
    runner = StepRunner(target, revision, timeout, versions_spoken(target, revision, timeout))
    out: list[orc.Violation] = []
    try:
        for step in steps:
            out += runner.run(step)
    finally:
        runner.close()
    return out, runner


def run_stateful(cfg: Any, revision: str, stats: Any, steps_per_run: int = 12) -> None:
    """Rounds of the state machine; each new violation is replayed and, if it shows again, kept.
    A revision the target does not speak is skipped, as in the other campaigns."""
    started = time.monotonic()
    budget_end = campaign_deadline(cfg, started)
    sent = drv.messages_sent()

    def show(phase: str) -> None:
        cfg.status(
            Status(
                revision, "stateful", phase, stats.examples, drv.messages_sent() - sent, len(stats.findings)
            )
        )

    show("learning the versions spoken")
    spoken = versions_spoken(cfg.target, revision, cfg.timeout)
    stats.sessions += 2
    if revision not in spoken and not cfg.all_revisions:
        raise TargetError(
            f"the target does not speak {revision} (its initialize answers name {sorted(spoken) or 'none'}); "
            "--all-revisions fuzzes it anyway"
        )
    machine = machine_for(cfg.target, revision, cfg.timeout, cfg.shrink_time, spoken)
    machine.budget_end = budget_end
    machine.on_step = lambda: show("shrinking" if machine.failures else "generating")
    examples = cfg.max_examples or 20
    for round_no in range(1, 1 + max(1, cfg.max_findings)):
        if time.monotonic() >= budget_end:
            break
        left = examples - stats.examples if cfg.max_examples is not None else examples
        if left <= 0:
            break
        machine.failures, machine.deadline, machine.runs, machine.sessions = [], float("inf"), 0, 0
        try:
            run_state_machine_as_test(
                seed(cfg.seed * 1000 + round_no)(machine),
                settings=search_settings(left, stateful_step_count=steps_per_run),
            )
        except TargetError:
            raise
        except KeyboardInterrupt:  # keep the finding being shrunk: its smallest run so far
            if machine.failures:
                _keep_interrupted(cfg, revision, stats, machine.failures)
            raise
        except _Violated:
            pass
        except Exception:
            if not machine.failures:
                raise  # the fuzzer's own error: the campaign is marked aborted
            # (a flaky report: the shrink budget ran out and the last run passed; the runs are kept)
        stats.examples += machine.runs
        stats.sessions += machine.sessions
        if not machine.failures:
            break
        key = machine.failures[0][0]
        best = min((steps for k, steps in machine.failures if k == key), key=len)
        machine.known.add(key)
        show("replaying")
        try:
            violations, runner = run_steps(cfg.target, revision, best, cfg.timeout)
        except KeyboardInterrupt:
            _keep_interrupted(cfg, revision, stats, machine.failures)
            raise
        stats.sessions += runner.sessions
        keep_if_replayed(
            cfg,
            stats,
            revision,
            "stateful",
            key,
            violations,
            len(best),
            partial(stateful_transcript, cfg, revision, best, violations, runner),
        )
    if len(stats.findings) >= cfg.max_findings:
        stats.capped = True


def _keep_interrupted(cfg: Any, revision: str, stats: Any, failures: list[tuple[str, list[Step]]]) -> None:
    """Ctrl-C while shrinking: keep the first violation's smallest run so far, unreplayed."""
    key = failures[0][0]
    best = min((steps for k, steps in failures if k == key), key=len)
    transcript = stateful_transcript(cfg, revision, best, [], None)
    keep_unreplayed(cfg, stats, revision, "stateful", [], key, transcript)
