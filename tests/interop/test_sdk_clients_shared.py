"""The official SDK clients through a round-robin proxy in front of three workers sharing Redis.

Three workers serve ``examples/everything.py`` with their sessions in one real redis-server,
behind a proxy that sends each HTTP request to the next worker
(``tests/_support/shared_everything.py``), so every session's requests are spread over all three:
the answer to a server-to-client request, a cancellation, the resumption of a broken response
stream, the polls of a task all land on other workers than the one running the call.

* The Python SDK (PyPI ``mcp``; ``tests/programs/sdk_everything_client.py --url``) runs twice,
  one run after the other: ``legacy`` (the initialize handshake at 2025-11-25: one session,
  shared), then ``auto`` (its discovery probe: the stateless 2026-07-28, where sampling and
  elicitation are multi-round-trip input requests, retried on any worker).  It has no task API:
  its ``tools/call`` result validation rejects a 2025-11-25 ``CreateTaskResult``, so 2025-11-25
  tasks cannot be driven through it; the Tasks extension of 2026-07-28 is, through the SDK's
  extension hooks (a result claim following the task with ``tasks/get`` and ``tasks/update``).
* The TypeScript SDK (``@modelcontextprotocol/sdk`` as the benchmarks pin it;
  ``tests/programs/ts_sdk_everything_client.mjs``) runs one 2025-11-25 session, its 2025-11-25
  tasks included (its experimental task API).
"""

from __future__ import annotations

import itertools
import sys
from typing import Any

import pytest

from benchmarks import _run_node
from tests._support import sdk_everything as stdio_suite
from tests._support.shared_everything import ROOT, Observed, Served, run_clients
from tools.redis_server import RedisServer

pytestmark = [
    pytest.mark.slow,
    pytest.mark.interop,
]  # 15 to 30 s: two sets of three workers, and three client runs


PROGRAM = ROOT / "tests" / "programs" / "sdk_everything_client.py"
TS_PROGRAM = ROOT / "tests" / "programs" / "ts_sdk_everything_client.mjs"
MODES = {"legacy": "2025-11-25", "auto": "2026-07-28"}
TIMEOUT = 120  # seconds for one client's whole run
REPLY = "This is a test response from the client"

_prefixes = itertools.count()


def prefix() -> str:
    return f"sdkproxy{next(_prefixes)}:"


@pytest.fixture(scope="module")
def python_sdk(redis_server: RedisServer) -> Observed:
    """The Python SDK client in both modes, one after the other, against one set of workers."""

    def command(mode: str) -> Any:
        return lambda url: [sys.executable, str(PROGRAM), "--mode", mode, "--url", url]

    return run_clients(redis_server.url, prefix(), {mode: command(mode) for mode in MODES}, TIMEOUT)


@pytest.fixture(params=list(MODES))
def out(request: pytest.FixtureRequest, python_sdk: Observed) -> dict[str, Any]:
    result = python_sdk.outputs[request.param]
    assert result["protocol_version"] == MODES[request.param]
    return result


@pytest.fixture(scope="module")
def ts_sdk(redis_server: RedisServer) -> tuple[Observed, dict[str, Any]]:
    """The TypeScript SDK client's run (Node and the pinned SDK installed as the benchmarks do)."""
    ts = _run_node.install_ts_sdk()
    command = [str(ts.node), str(TS_PROGRAM), "--sdk", str(ts.node_modules), "--url"]
    observed = run_clients(redis_server.url, prefix(), {"ts": lambda url: [*command, url]}, TIMEOUT)
    return observed, observed.outputs["ts"]


def served_in(observed: Observed, out: dict[str, Any]) -> list[Served]:
    """The requests of this client's run, as the workers recorded them (a 2026-07-28 client's
    requests carry no session id; the handshake-era client's all carry its session's)."""
    session_id = out.get("session_id")
    if session_id is None and out.get("protocol_version", "") < "2026-07-28":
        ids = {s.session_id for s in observed.served if s.session_id is not None}
        session_id = next(iter(ids)) if len(ids) == 1 else None
        assert session_id is not None, ids
    return [s for s in observed.served if s.session_id == session_id]


def resumed_on_another_worker(observed: Observed, out: dict[str, Any], session_id: str) -> None:
    """The call of ``test_reconnection`` ran on one worker; its stream was resumed (a GET with
    Last-Event-ID of its session) on another."""
    (ran_on,) = workers_of(served_in(observed, out), "tools/call", "test_reconnection")
    resumed = [r for r in observed.received if r.session_id == session_id and r.last_event_id]
    assert resumed and all(r.method == "GET" for r in resumed), resumed
    assert ran_on not in {r.worker for r in resumed}, (ran_on, resumed)


def cancelled_from_another_worker(observed: Observed, out: dict[str, Any], session_id: str) -> None:
    """The abandoned ``slow_compute`` was cancelled on one worker; the client's
    ``notifications/cancelled`` (of its session) reached another."""
    served = served_in(observed, out)
    (ran_on,) = {s.worker for s in served if s.name == "slow_compute" and s.outcome == "cancelled"}
    told = [
        r for r in observed.received if r.session_id == session_id and r.message == "notifications/cancelled"
    ]
    assert told and told[0].worker != ran_on, (ran_on, told)  # (the first one cancelled it)


def answered_through_another_worker(observed: Observed, session_id: str, tool: str) -> None:
    """The call of ``tool`` (which asks the client something) came to one worker; the client's
    answer (the next response the session posted) to another."""
    posted = [r for r in observed.received if r.session_id == session_id and r.message is not None]
    (call,) = [i for i, r in enumerate(posted) if r.message == f"tools/call {tool}"]
    answer = next(r for r in posted[call:] if r.message == "response")
    assert answer.worker != posted[call].worker, (posted[call], answer)


def workers_of(served: list[Served], method: str, name: str | None = None) -> set[str]:
    return {s.worker for s in served if s.method == method and (name is None or s.name == name)}


# ------------------------------------------------------------------ Python SDK


def test_python_sdk_session_is_served_by_every_worker(python_sdk: Observed, out: dict[str, Any]) -> None:
    stdio_suite.check_connection(out)
    served = served_in(python_sdk, out)
    assert {s.worker for s in served} == {"w0", "w1", "w2"}
    assert len(workers_of(served, "tools/call")) == 3


def test_python_sdk_tools_resources_and_prompts(out: dict[str, Any]) -> None:
    stdio_suite.check_tools_listed(out)
    stdio_suite.check_content_tools(out)
    stdio_suite.check_resources(out)
    stdio_suite.check_prompts_and_completions(out)
    stdio_suite.check_input_and_task_fixtures(out)


def legacy_session(observed: Observed, out: dict[str, Any]) -> str | None:
    """The session id of a handshake-era run, ``None`` for a 2026-07-28 one."""
    if out["protocol_version"] >= "2026-07-28":
        return None
    (session_id,) = {s.session_id for s in served_in(observed, out)}
    assert session_id is not None
    return session_id


def test_python_sdk_sampling(python_sdk: Observed, out: dict[str, Any]) -> None:
    stdio_suite.check_sampling(out)
    if session_id := legacy_session(python_sdk, out):  # (2026-07-28: retried with the answer)
        answered_through_another_worker(python_sdk, session_id, "test_sampling")


def test_python_sdk_elicitation(python_sdk: Observed, out: dict[str, Any]) -> None:
    stdio_suite.check_elicitation(out)
    if session_id := legacy_session(python_sdk, out):
        answered_through_another_worker(python_sdk, session_id, "test_elicitation")


def test_python_sdk_logging_and_progress(out: dict[str, Any]) -> None:
    stdio_suite.check_logging_and_progress(out)


def test_python_sdk_cancellation(python_sdk: Observed, out: dict[str, Any]) -> None:
    cancellation = out["cancellation"]
    assert cancellation["cancelled"] is True
    assert cancellation["elapsed"] < 10  # the slow call would take 30 s
    assert stdio_suite.text_of(cancellation["after"]) == "Hello, after the cancel!"
    # the handler of the abandoned call was cancelled, on whichever worker ran it
    slow = [s.outcome for s in served_in(python_sdk, out) if s.name == "slow_compute"]
    assert slow.count("cancelled") == 1  # (the others: its 0 s call, and those run as tasks)
    if session_id := legacy_session(python_sdk, out):  # (2026-07-28: the request is closed instead)
        cancelled_from_another_worker(python_sdk, out, session_id)


def test_python_sdk_resumption(python_sdk: Observed, out: dict[str, Any]) -> None:
    """``test_reconnection`` closes its response stream mid-call; the SDK gets the rest of it
    (a log message and the result) by reconnecting with Last-Event-ID, through the proxy."""
    assert stdio_suite.text_of(out["calls"]["test_reconnection"]) == "Reconnection test completed"
    if out["protocol_version"] < "2026-07-28":  # (a 2026-07-28 client opted in to no logs here)
        logs = out["logs"]
        assert logs.index(["info", "Before disconnect"]) < logs.index(["info", "After reconnect"])
        session_id = legacy_session(python_sdk, out)
        assert session_id is not None
        resumed_on_another_worker(python_sdk, out, session_id)


def test_python_sdk_tasks_of_the_extension(python_sdk: Observed) -> None:
    out = python_sdk.outputs["auto"]
    tasks = out["tasks"]
    assert tasks["protocol_version"] == "2026-07-28"
    assert "io.modelcontextprotocol/tasks" in tasks["extensions"]
    texts = {name: stdio_suite.text_of(result) for name, result in tasks["results"].items()}
    assert texts == {
        "slow_compute": "Computed a task in 0.5 s",
        "confirm_delete": "Deleted task.txt (not really: this is a test fixture)",
        "multi_input": "name=SDK user, confirm=True",
        "failing_job": "failing_job: the job failed, on purpose",
    }
    assert tasks["results"]["failing_job"]["isError"] is True
    slow, confirm, multi, failing = tasks["statuses"]  # every status each task was seen in
    assert slow[0] == "working" and slow[-1] == "completed" and "input_required" not in slow
    assert "input_required" in confirm and confirm[-1] == "completed"
    assert "input_required" in multi and multi[-1] == "completed"
    assert failing[-1] == "completed"
    assert tasks["cancel"] in ({}, {"resultType": "complete"})
    assert tasks["cancelled"]["status"] == "cancelled"
    # followed from every worker, answered (tasks/update) through others than the one running it
    served = served_in(python_sdk, out)
    assert workers_of(served, "tasks/get") == {"w0", "w1", "w2"}
    assert workers_of(served, "tasks/update")


# -------------------------------------------------------------- TypeScript SDK


def test_ts_sdk_session_is_served_by_every_worker(ts_sdk: tuple[Observed, dict[str, Any]]) -> None:
    observed, out = ts_sdk
    assert out["protocol_version"] == "2025-11-25"
    assert out["server_info"]["name"] == "mcp-trio-everything"
    served = served_in(observed, out)
    assert {s.worker for s in served} == {"w0", "w1", "w2"}
    assert {s.session_id for s in observed.served} == {out["session_id"]}


def test_ts_sdk_sampling(ts_sdk: tuple[Observed, dict[str, Any]]) -> None:
    observed, out = ts_sdk
    answered_through_another_worker(observed, out["session_id"], "test_sampling")
    assert out["calls"]["test_sampling"] == f"LLM response: {REPLY}"
    (request,) = out["sampling_requests"]
    assert request["maxTokens"] == 100
    assert request["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Test prompt for sampling"}}
    ]


def test_ts_sdk_elicitation(ts_sdk: tuple[Observed, dict[str, Any]]) -> None:
    observed, out = ts_sdk
    answered_through_another_worker(observed, out["session_id"], "test_elicitation")
    assert out["calls"]["test_elicitation"] == (
        'User response: action=accept, content={"username":"testuser","email":"test@example.com"}'
    )
    contact = out["elicitation_requests"][0]
    assert contact["message"] == "Please provide your information"
    assert contact["requestedSchema"]["required"] == ["username", "email"]


def test_ts_sdk_logging_and_progress(ts_sdk: tuple[Observed, dict[str, Any]]) -> None:
    _, out = ts_sdk
    assert out["calls"]["test_tool_with_logging"] == "Tool with logging executed successfully"
    assert out["logs"][:3] == [
        ["info", "Tool execution started"],
        ["info", "Tool processing data"],
        ["info", "Tool execution completed"],
    ]
    assert out["calls"]["test_tool_with_progress"] != "no progress token was given"
    assert out["progress"] == [
        [0, 100, "Completed step 0 of 100"],
        [50, 100, "Completed step 50 of 100"],
        [100, 100, "Completed step 100 of 100"],
    ]


def test_ts_sdk_cancellation(ts_sdk: tuple[Observed, dict[str, Any]]) -> None:
    observed, out = ts_sdk
    cancellation = out["cancellation"]
    assert "enough" in cancellation["error"]  # the abort's reason
    assert cancellation["elapsed"] < 10
    assert cancellation["after"] == "Hello, after the cancel!"
    slow = [s for s in served_in(observed, out) if s.method == "tools/call" and s.name == "slow_compute"]
    assert [s.outcome for s in slow].count("cancelled") == 1
    cancelled_from_another_worker(observed, out, out["session_id"])


def test_ts_sdk_resumption(ts_sdk: tuple[Observed, dict[str, Any]]) -> None:
    observed, out = ts_sdk
    assert out["calls"]["test_reconnection"] == "Reconnection test completed"
    logs = out["logs"]
    assert logs.index(["info", "Before disconnect"]) < logs.index(["info", "After reconnect"])
    # the SDK kept the stream's event ids (its resumption tokens), on both sides of the break
    tokens = out["resumption_tokens"]
    assert len(tokens) >= 2 and len(set(tokens)) == len(tokens)
    resumed_on_another_worker(observed, out, out["session_id"])


def test_ts_sdk_tasks(ts_sdk: tuple[Observed, dict[str, Any]]) -> None:
    observed, out = ts_sdk
    tasks = out["tasks"]
    slow = tasks["slow_compute"]
    assert "error" not in slow, slow
    assert slow["statuses"][0] == "working" and slow["statuses"][-1] == "completed"
    assert slow["result"]["content"] == [{"type": "text", "text": "Computed a task in 0.5 s"}]
    # a tool result with isError: true makes a 2025-11-25 task failed
    assert tasks["failing_job"]["statuses"][-1] == "failed" and "failed" in tasks["failing_job"]["error"]
    assert tasks["cancel"]["status"] == "cancelled"
    assert tasks["cancelled"]["status"] == "cancelled"
    served = served_in(observed, out)
    assert len(workers_of(served, "tasks/get")) >= 2
    assert workers_of(served, "tasks/result") and workers_of(served, "tasks/cancel")


def test_ts_sdk_task_asking_the_user(ts_sdk: tuple[Observed, dict[str, Any]]) -> None:
    """A task asking the user: input_required, then the question reaches the client on its GET
    stream (held by whichever worker got the GET), and the answer reaches the task."""
    _, out = ts_sdk
    confirm = out["tasks"]["confirm_delete"]
    assert "error" not in confirm, confirm
    assert "input_required" in confirm["statuses"]
    assert confirm["result"]["content"][0]["text"].startswith("Deleted task.txt")
    task_ask = out["elicitation_requests"][-1]
    assert task_ask["message"] == "Delete task.txt?"
    assert "io.modelcontextprotocol/related-task" in task_ask["_meta"]
