"""Fuzzing MCP clients: a fuzzing Streamable HTTP (or stdio) server and the client-side oracles.

``mcp-trio fuzz --client "CMD ARGS"`` starts :class:`FuzzServer` on
127.0.0.1 (port 0) for every example and launches ``CMD ARGS URL``; with
``--client-transport stdio``, :class:`StdioFuzzServer` and ``CMD ARGS RELAY...``
(the client starts the relay as its stdio server, see ``_relay.py``).  The
client does whatever it does (connect, list, call ...); the server follows a
:data:`Plan` drawn by hypothesis:

* ``answers``: per method, how its first, second ... call is answered: a
  result generated from the revision's result types, a mutated result, a
  JSON-RPC error with any code, the answer twice, a response to an unknown id
  or a non-JSON SSE event before the answer.  Calls the plan does not cover get
  the smallest valid result (:func:`minimal`).
* ``steps``: server-to-client messages sent on the response stream of the
  client's n-th request (after ``initialize``), before its answer: requests
  (``ping``, ``sampling/createMessage``, ``elicitation/create``,
  ``roots/list`` ...) and notifications with valid or mutated params, and
  requests of methods no client has; and what no valid id names: JSON-RPC batches,
  an empty batch, requests whose id is no string or integer (sent as the plan has
  them, not renumbered), a request without an id.  Every step with messages ends with a
  ``ping`` (and the first step always has one): the client must answer it.

Before any plan is drawn, a campaign serves its corpus (:func:`~._plans.known_bad_plans`:
every malformed shape above once; :func:`~._plans.capability_corpus` for ``capabilities``).

The plan is plain JSON, so a transcript holds it and :func:`replay_client`
runs it again against the same command.  Client-side oracles
(:func:`check_client`) look at everything the server saw: answers to our
requests (exactly one each, same id, the spec's error codes, results that
decode), no answers to notifications, request ids never reused, every message
valid for the negotiated revision, the Streamable HTTP headers a client MUST
send, and a process that exits by itself with status 0 within the time allowed.

The ``capabilities`` campaign (:func:`capability_plans`) sends, instead, requests that
need a client capability (``sampling/createMessage``, ``elicitation/create``,
``roots/list``, ``tasks/*``), each only when the client's ``initialize`` did not declare
it; the answer should be an error, -32601 (:func:`~.oracles.judge_capability_answer`).

A JSON-RPC batch of the client is served like single messages in 2025-03-26 (each request
answered on one response stream, 202 when it holds none) and refused with 400 (-32600)
elsewhere; a batch in a revision without batches is a ``valid-message`` violation.

In 2026-07-28 there is no session: the server answers ``server/discover``, refuses a
request whose ``_meta`` does not carry the revision and the client's capabilities, and
judges the request headers against the body
(:func:`~._client_oracles._check_stateless_headers`); its steps are notifications only.
Server-to-client requests travel inside ``InputRequiredResult`` there, which the server
does not send yet, so the client ``capabilities`` campaign skips that revision
(see :func:`mcp_trio.fuzzing.runner._skip_reason`).

This module launches the client against the fuzzing server (:func:`run_plan`) and runs the
client campaigns (:func:`client_hunt`, :func:`replay_client`); the plans are in :mod:`._plans`,
the servers in :mod:`._fuzz_server` and :mod:`._stdio_fuzz_server`, the oracles in
:mod:`._client_oracles` (their public names are re-exported here).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from ..types import _versions
from . import oracles as orc
from ._client_oracles import ClientRun as ClientRun
from ._client_oracles import check_client as check_client
from ._findings import TRANSCRIPT_FORMAT, Hunt, TargetDown, TargetError
from ._fuzz_server import FuzzServer as FuzzServer
from ._fuzz_server import ServerLog as ServerLog
from ._fuzz_server import _dump
from ._plans import Plan as Plan
from ._plans import capability_corpus, known_bad_plans
from ._plans import capability_plans as capability_plans
from ._plans import default_result as default_result
from ._plans import initialize_result as initialize_result
from ._plans import minimal as minimal
from ._plans import plans as plans
from ._plans import server_methods as server_methods
from ._stdio_fuzz_server import StdioFuzzServer as StdioFuzzServer
from .driver import CommandTarget

__all__ = [
    "ClientRun",
    "ClientTarget",
    "FuzzServer",
    "StdioFuzzServer",
    "check_client",
    "minimal",
    "plans",
    "run_plan",
]


class ClientTarget(CommandTarget):
    """A client launched against a fuzzing server, once per example.

    ``transport="http"``: launched as ``CMD ARGS URL`` (the fuzzing server's Streamable HTTP
    endpoint).  ``transport="stdio"``: launched as ``CMD ARGS SERVER...``, where ``SERVER...`` is
    the command of a small relay (``_relay.py``) the client starts as its stdio server and that
    connects back to the fuzzing server.  An argument that is exactly ``{server}`` is replaced
    by the URL, or by the relay's command as one shell-quoted string, instead of appending.
    """

    kind = "client"
    TRANSPORTS = ("http", "stdio")

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        transport: str = "http",
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        if transport not in self.TRANSPORTS:
            raise ValueError(f"unknown client transport {transport!r} (one of {', '.join(self.TRANSPORTS)})")
        super().__init__(command, cwd=cwd, env=env)
        self.transport = transport

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), **({"transport": self.transport} if self.transport != "http" else {})}

    def launch_argv(self, server: Sequence[str]) -> list[str]:
        """The client's command line, given the server's URL (``[url]``) or relay command."""
        if "{server}" in self.argv:
            joined = server[0] if len(server) == 1 else shlex.join(server)
            return [joined if arg == "{server}" else arg for arg in self.argv]
        return [*self.argv, *server]

    @classmethod
    def from_description(cls, desc: dict[str, Any]) -> ClientTarget:
        return cls(desc["command"], transport=desc.get("transport", "http"), cwd=desc.get("cwd"))


def run_plan(
    target: ClientTarget, revision: str, plan: Plan, *, timeout: float, run_time: float
) -> ClientRun:
    """Serve ``plan`` to one launch of the client; stop it if it is still running after ``run_time``."""
    stdio = target.transport == "stdio"
    server = StdioFuzzServer(plan, revision, timeout) if stdio else FuzzServer(plan, revision, timeout)
    argv = target.launch_argv(server.relay_argv if isinstance(server, StdioFuzzServer) else [server.url])
    hung = False
    with tempfile.TemporaryFile() as out:
        try:
            try:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=target.cwd,
                    env=target.env,
                    start_new_session=True,
                )
            except OSError as exc:
                raise TargetDown(f"the client cannot start: {exc}") from exc
            try:
                proc.wait(timeout=run_time)
            except subprocess.TimeoutExpired:
                hung = True
                _stop(proc)
        finally:
            server.close()
        out.seek(0)
        output = out.read()[-16384:].decode("utf-8", "replace")
    return ClientRun(
        server.log, proc.returncode if not hung else None, hung, output, revision, target.transport
    )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for action in (proc.terminate, proc.kill):
        action()
        try:
            proc.wait(timeout=2.0)
            return
        except subprocess.TimeoutExpired:
            continue


def transcript_of(
    target: ClientTarget,
    revision: str,
    plan: Plan,
    run: ClientRun,
    violations: list[orc.Violation],
    timeout: float,
    run_time: float,
    seed: int | None,
    fmt: str,
    campaign: str = "client",
) -> dict[str, Any]:
    return {
        "format": fmt,
        "target": target.describe(),
        "revision": revision,
        "negotiated": run.log.negotiated,
        "campaign": campaign,
        **({"client_capabilities": run.log.client_capabilities} if campaign == "capabilities" else {}),
        "timeout": timeout,
        "run_time": run_time,
        **({"seed": seed} if seed is not None else {}),
        "plan": plan,
        "case": [],
        "violations": [v.to_json() for v in violations],
        "events": run.log.events,
        "exit_code": run.exit_code,
        "stderr": run.output[-4000:],
    }


# ------------------------------------------------------------------ runner


def client_hunt(
    cfg: Any, revision: str, stats: Any, campaign: str = "client", deadline: float = float("inf")
) -> Any:
    """The ``client`` (or client ``capabilities``) campaign for :func:`mcp_trio.fuzzing.runner._search`:
    one client run per example, the corpus first (:func:`~._plans.known_bad_plans`, every
    malformed shape once; for ``capabilities`` :func:`~._plans.capability_corpus`).  A run gets
    ``run_time`` or what is left until ``deadline``
    (``time.monotonic()``; the campaign's budget), whichever is less; a run the budget cut short
    is judged by nothing it did not finish (it is no hang)."""
    target: ClientTarget = cfg.target

    def execute(plan: Plan) -> tuple[list[bytes], list[str], list[orc.Violation]]:
        stats.sessions += 1
        allowed = max(0.5, min(cfg.run_time, deadline - time.monotonic()))
        run = run_plan(target, revision, plan, timeout=cfg.timeout, run_time=allowed)
        if stats.sessions == 1 and not cfg.all_revisions and _speaks_another_revision(run):
            raise TargetError(
                f"the client does not speak {revision} (it sent initialize instead); "
                "--all-revisions fuzzes it anyway"
            )
        if run.hung and allowed < cfg.run_time:
            return [_dump(plan)], [], []  # cut short by the budget: no verdict
        return [_dump(plan)], [], check_client(run, cfg.run_time)

    def replay_best(payloads: list[bytes], notes: list[str]) -> tuple[dict[str, Any], list[orc.Violation]]:
        return _replay_plan(
            target, revision, json.loads(payloads[0]), cfg.timeout, cfg.run_time, cfg.seed, campaign
        )

    def sketch(payloads: list[bytes], notes: list[str]) -> dict[str, Any]:
        return {
            "format": TRANSCRIPT_FORMAT,
            "target": target.describe(),
            "revision": revision,
            "campaign": campaign,
            "timeout": cfg.timeout,
            "run_time": cfg.run_time,
            "seed": cfg.seed,
            "plan": json.loads(payloads[0]),
            "case": [],
            "violations": [],
        }

    strategy = capability_plans(revision) if campaign == "capabilities" else plans(revision)
    corpus = capability_corpus(revision) if campaign == "capabilities" else known_bad_plans(revision)
    if cfg.skip_probes:
        skip = frozenset(cfg.skip_probes)
        strategy = strategy.filter(lambda plan: not skip & plan_kinds(plan))
        corpus = [plan for plan in corpus if not skip & plan_kinds(plan)]
    return Hunt(strategy, execute, replay_best, lambda: None, corpus=corpus, sketch=sketch)


def _speaks_another_revision(run: ClientRun) -> bool:
    """A client asked for 2026-07-28 that opened with ``initialize`` (a handshake revision) and
    never sent a request of the stateless revision: it does not speak it, which is no finding."""
    return (
        _versions.is_stateless(run.revision)
        and run.log.negotiated is None
        and any(isinstance(m, dict) and m.get("method") == "initialize" for m, _ in run.log.client_messages)
    )


def plan_kinds(plan: Plan) -> set[str]:
    """The probe kinds a plan uses, as ``--skip`` names them: injection notes with and without their
    detail (``params``, ``params:params_not_object``, ``unknown_method`` ...), the same for one
    method (``params@ping``), and answer kinds (``mutated``, ``junk-event`` ...)."""
    kinds: set[str] = set()
    for step in plan.get("steps") or []:
        for inj in step:
            message = inj["message"]
            note, method = inj["note"], message.get("method") if isinstance(message, dict) else "batch"
            kinds |= {note, note.split(":")[0], f"{note.split(':')[0]}@{method}"}
    return kinds | {a["kind"] for answers in (plan.get("answers") or {}).values() for a in answers}


def _replay_plan(
    target: ClientTarget,
    revision: str,
    plan: Plan,
    timeout: float,
    run_time: float,
    seed: int | None,
    campaign: str = "client",
) -> tuple[dict[str, Any], list[orc.Violation]]:
    run = run_plan(target, revision, plan, timeout=timeout, run_time=run_time)
    violations = check_client(run, run_time)
    return transcript_of(
        target, revision, plan, run, violations, timeout, run_time, seed, TRANSCRIPT_FORMAT, campaign
    ), violations


def replay_client(
    data: dict[str, Any], *, target: Any = None, timeout: float | None = None
) -> tuple[dict[str, Any], list[orc.Violation]]:
    """Serve a client transcript's plan again to a fresh launch of the client."""
    if target is None:
        desc = data["target"]
        target = ClientTarget.from_description(desc)
    if not isinstance(target, ClientTarget):
        raise ValueError("a client transcript replays against a client (--client CMD)")
    return _replay_plan(
        target,
        data["revision"],
        data["plan"],
        timeout or data.get("timeout", 5.0),
        data.get("run_time", 30.0),
        None,
        data.get("campaign", "client"),
    )
