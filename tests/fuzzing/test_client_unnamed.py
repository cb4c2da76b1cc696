"""Client campaigns: what the fuzzing server sends that no valid request id names (JSON-RPC
batches, an empty batch, requests whose id is no string or integer, a request without an id),
over Streamable HTTP and stdio, and how the client-side oracles grade the answers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from mcp_trio.fuzzing import client as C
from mcp_trio.fuzzing._plans import known_bad_plans, plans, unnamed_injections
from mcp_trio.fuzzing.strategies import BAD_IDS, known_bad
from mcp_trio.types import _versions
from tests._support.paths import ROOT

OWN_CLIENT = str(ROOT / "fuzz" / "targets" / "mcp_trio_client.py")
BROKEN = str(Path(__file__).with_name("broken_client.py"))
WITH_REQUESTS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


def _null_errors(run: C.ClientRun) -> list[dict[str, object]]:
    return [
        m
        for m, _ in run.log.client_messages
        if isinstance(m, dict) and "method" not in m and m.get("id") is None and "error" in m
    ]


def test_the_corpus_sends_each_unnamed_shape_once_with_the_server_corpus_bad_ids() -> None:
    server_side = [case[0].obj["id"] for case in known_bad("2025-11-25") if case[0].note == "bad_id"]
    assert list(BAD_IDS) == server_side  # (one list for both sides)
    for revision in WITH_REQUESTS:
        steps = [inj for plan in known_bad_plans(revision) for step in plan["steps"] for inj in step]
        unnamed = [
            inj for inj in steps if inj["note"] in ("batch", "empty_batch", "bad_id", "request_without_id")
        ]
        assert unnamed == unnamed_injections(revision)
        assert [inj["message"]["id"] for inj in unnamed if inj["note"] == "bad_id"] == list(BAD_IDS)
        assert {"jsonrpc": "2.0", "method": "ping", "params": {}} in [inj["message"] for inj in unnamed]
        batches = [inj["message"] for inj in unnamed if inj["note"] in ("batch", "empty_batch")]
        assert [] in batches and any(any("id" not in m for m in b) for b in batches)
    # 2026-07-28 has no server-to-client requests (and no batches)
    assert unnamed_injections("2026-07-28") == []
    assert not any(
        isinstance(inj["message"], list)
        for plan in known_bad_plans("2026-07-28")
        for s in plan["steps"]
        for inj in s
    )


def test_the_plan_strategy_draws_batches_too() -> None:
    seen: set[str] = set()

    @settings(
        max_examples=60,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(plans("2025-03-26"))
    def draw(plan: C.Plan) -> None:
        seen.update(inj["note"] for step in plan["steps"] for inj in step)

    draw()
    assert "batch" in seen


@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("revision", WITH_REQUESTS)
def test_our_client_answers_every_unnamed_shape(revision: str, transport: str) -> None:
    # every shape in one step: one launch of the client per revision and transport
    argv = [sys.executable, OWN_CLIENT, *(["--stdio"] if transport == "stdio" else [])]
    target = C.ClientTarget(argv, transport=transport)
    plan = {"answers": {}, "steps": [unnamed_injections(revision)]}
    run = C.run_plan(target, revision, plan, timeout=3, run_time=20)
    assert C.check_client(run, 20) == [], run.output
    errors = _null_errors(run)
    assert errors and all(e["error"]["code"] == -32600 for e in errors)  # type: ignore[index]
    # an empty batch and each bad id (a refused batch may add one): -32600, id null, each
    assert len(errors) >= 1 + len(BAD_IDS)
    batched = [s for s in run.log.sent.values() if s["note"] == "batch"]
    assert len(batched) == 3  # ping, ping, and the ping with id true is no request we number
    if _versions.supports_batching(revision):
        assert all(run.log.answers.get(key) for key, s in run.log.sent.items() if s["note"] == "batch")


BROKEN_CASES = [
    # (mode, revision, the finding's key, its rule, its grade)
    ("lenient", "2025-11-25", "error-codes:result-instead-of--32600", "lenient-input", "deviation"),
    ("no-batches", "2025-03-26", "one-response:batch-missing", "batch-receive", "violation"),
    ("no-batches", "2025-03-26", "error-codes:missing--32600", "reply", "violation"),
    ("no-batches", "2025-11-25", "error-codes:missing--32600", "reply", "violation"),
    ("chatty", "2025-11-25", "no-response-to-notification:null-id", "no-reply-to-notification", "violation"),
]


#: right, if unusual: a batch of ours answered with one array, even where batches are not allowed
#: (we sent one first)
RIGHT = [("batched", "2025-03-26"), ("batched", "2025-11-25")]


@pytest.mark.parametrize(("mode", "revision"), sorted({(m, r) for m, r, *_ in BROKEN_CASES} | set(RIGHT)))
def test_how_a_client_handles_unnamed_messages_is_graded(mode: str, revision: str) -> None:
    good = C.run_plan(
        C.ClientTarget([sys.executable, BROKEN, "good"]),
        revision,
        {"answers": {}, "steps": [unnamed_injections(revision)]},
        timeout=2,
        run_time=15,
    )
    assert C.check_client(good, 15) == [], good.output  # the same script, right, passes
    run = C.run_plan(
        C.ClientTarget([sys.executable, BROKEN, mode]),
        revision,
        {"answers": {}, "steps": [unnamed_injections(revision)]},
        timeout=2,
        run_time=15,
    )
    found = {(v.key, v.rule, v.severity) for v in C.check_client(run, 15)}
    expected = {(key, rule, grade) for m, r, key, rule, grade in BROKEN_CASES if (m, r) == (mode, revision)}
    assert found == expected, run.output
    if mode == "no-batches" and revision == "2025-11-25":
        assert not any(
            v.key.startswith("one-response") for v in C.check_client(run, 15)
        )  # (refusing is fine)


def test_a_client_that_dies_of_a_bad_id_is_reported_once_as_dead() -> None:
    # (one cause, one finding: the -32600 it never sent is not a second one)
    plan = {
        "answers": {},
        "steps": [[{"note": "bad_id", "message": {"jsonrpc": "2.0", "id": True, "method": "ping"}}]],
    }
    run = C.run_plan(
        C.ClientTarget([sys.executable, BROKEN, "fragile"]), "2025-11-25", plan, timeout=2, run_time=15
    )
    assert run.exit_code == 3
    keys = {v.key for v in C.check_client(run, 15)}
    assert "alive:exit-status" in keys and not any(k.startswith("error-codes") for k in keys), keys


def test_a_batch_ignored_whole_is_one_finding() -> None:
    # 2025-03-26: its member with id true is not a second finding of the same cause
    [with_bad_member] = [
        inj for inj in unnamed_injections("2025-03-26") if inj["note"] == "batch" and len(inj["message"]) == 2
    ]
    run = C.run_plan(
        C.ClientTarget([sys.executable, BROKEN, "no-batches"]),
        "2025-03-26",
        {"answers": {}, "steps": [[with_bad_member]]},
        timeout=2,
        run_time=15,
    )
    assert {v.key for v in C.check_client(run, 15)} == {"one-response:batch-missing"}
