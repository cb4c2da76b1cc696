"""The one-pass decoders against the two-pass path, on messages varied member by member.

``test_one_pass_request.py`` and ``test_one_pass_response.py`` hold tables of
chosen messages.  Here each one-pass path starts from a message it takes (a
request of the settled revision: legacy, batching, stateless, with the Tasks
extension; the ``initialize`` that opens a session; the answer to the only
pending request: plain, a call that may become a task, stateless) and the
message is changed: a member of it, of its params or of their ``_meta`` set to
another value, repeated, dropped; the members reordered.  Every change of one
member is tried, then hypothesis combines several over a few messages.  Two
sessions in the same state receive the same bytes, one as built and one with
every one-pass path switched off; their events and their state after must be
the same, message after message.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_trio._core import ResponseReceived, SessionCore, State
from mcp_trio.types import _versions, ext_tasks
from tests._support.core import client, handshake, patch_receiver, server

LEGACY = "2025-11-25"
BATCHING = "2025-03-26"
MODERN = [v for v in _versions.SUPPORTED_VERSIONS if _versions.is_stateless(v)]
MODERN_VERSION = MODERN[0] if MODERN else "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"
EXT = ext_tasks.EXTENSION_ID
WITH_EXT = {"extensions": {EXT: {}}}

_ONE_PASS = ("_receive_known_request", "_receive_initialize", "_receive_expected_result")

CALL = {"name": "search", "arguments": {"q": "x", "n": [1, 2.5, None, True]}}
TOOLS = {"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}
TASK = {
    "task": {
        "taskId": "t1",
        "status": "working",
        "createdAt": "2025-01-01T00:00:00Z",
        "lastUpdatedAt": "2025-01-01T00:00:00Z",
        "ttl": 1000,
    }
}
META = {PV: MODERN_VERSION, CC: {"sampling": {}}}

# ------------------------------------------------------------------ sessions


def _legacy_server(version: str) -> SessionCore:
    srv = server()
    handshake(srv, client(versions=[version]), version)
    return srv


def _modern_server(**kw: Any) -> SessionCore:
    srv = server(**kw)
    params = {**CALL, "_meta": META}
    message = {"jsonrpc": "2.0", "id": 0, "method": "tools/call", "params": params}
    srv.receive(json.dumps(message).encode())
    assert srv.state is State.MODERN  # the revision is settled
    return srv


def _client_waiting(method: str, params: Any = None) -> SessionCore:
    cli = client(versions=[LEGACY])
    handshake(server(), cli, LEGACY)
    cli.start_request(method, params)
    return cli


def _modern_client_waiting(**kw: Any) -> SessionCore:
    cli = client(**kw)
    cli.use_modern(MODERN_VERSION, server_capabilities={"tools": {}})
    cli.start_request("tools/call", {"name": "t"})
    return cli


SESSIONS: dict[str, Callable[[], SessionCore]] = {
    "legacy": lambda: _legacy_server(LEGACY),
    "batching": lambda: _legacy_server(BATCHING),
    "new": server,
    "tools/list": lambda: _client_waiting("tools/list"),
    "tools/call": lambda: _client_waiting("tools/call", {"name": "t"}),
    # (a task-augmented call: its answer always takes the two-pass path, which peeks)
    "task call": lambda: _client_waiting("tools/call", {"name": "t", "task": {"ttl": 1000}}),
}
if MODERN:
    SESSIONS["modern"] = _modern_server
    SESSIONS["modern call"] = _modern_client_waiting
    # the Tasks extension, declared by the server and by the client
    SESSIONS["modern ext"] = lambda: _modern_server(capabilities={"tools": {}, **WITH_EXT})
    SESSIONS["modern ext call"] = lambda: _modern_client_waiting(capabilities=WITH_EXT)


def _pair(name: str) -> tuple[SessionCore, SessionCore]:
    fast, slow = SESSIONS[name](), SESSIONS[name]()
    patch_receiver(slow, **dict.fromkeys(_ONE_PASS, lambda data, events: False))
    return fast, slow


# ------------------------------------------------------------------ messages


def _initialize_params() -> dict[str, Any]:
    return {
        "protocolVersion": server().legacy_versions[0],
        "capabilities": {"sampling": {}},
        "clientInfo": {"name": "c", "version": "1"},
    }


TEMPLATES: dict[str, list[tuple[str, Any]]] = {
    "legacy": [("jsonrpc", "2.0"), ("id", 5), ("method", "tools/call"), ("params", CALL)],
    "modern": [
        ("jsonrpc", "2.0"),
        ("id", 5),
        ("method", "tools/call"),
        ("params", {**CALL, "_meta": META}),
    ],
    "new": [
        ("jsonrpc", "2.0"),
        ("id", 0),
        ("method", "initialize"),
        ("params", _initialize_params()),
    ],
    "tools/list": [("jsonrpc", "2.0"), ("id", 2), ("result", TOOLS)],
    "tools/call": [("jsonrpc", "2.0"), ("id", 2), ("result", {"content": []})],
    "task call": [("jsonrpc", "2.0"), ("id", 2), ("result", TASK)],
    "modern call": [("jsonrpc", "2.0"), ("id", 1), ("result", {"content": []})],
    "modern ext": [
        ("jsonrpc", "2.0"),
        ("id", 5),
        ("method", "tasks/get"),
        ("params", {"taskId": "a", "_meta": {**META, CC: {"extensions": {EXT: {}}}}}),
    ],
}
TEMPLATES["batching"] = TEMPLATES["legacy"]
TEMPLATES["modern ext call"] = TEMPLATES["modern call"]

# Values of the members of a message, of its params, and of their ``_meta``.
VALUES: dict[str, list[Any]] = {
    "jsonrpc": ["2.0", "1.0", 2.0, None],
    "id": [0, 1, 2, 5, "2", "5", 2.0, -1, 2**70, None, True, [5], {}],
    "method": [
        "tools/call",
        "tools/list",
        "tasks/get",
        "ping",
        "initialize",
        "server/discover",
        "notifications/cancelled",
        "sampling/createMessage",
        "no/such",
        7,
    ],
    "params": [
        CALL,
        {"name": 3},
        {"name": "a", "zzz": 1},
        {},
        [],
        None,
        "x",
        3,
        {"cursor": "c"},
        {**CALL, "_meta": META},
        {"_meta": META},
        _initialize_params(),
    ],
    "result": [
        TOOLS,
        {"tools": 3},
        {"tools": []},
        {},
        None,
        [],
        3,
        "x",
        TASK,
        {"task": 3},
        {"content": []},
        {"content": [], "resultType": "complete"},
        {"content": [], "resultType": "input_required"},
        {"resultType": "input_required", "inputRequests": {}},
        {"content": [], "resultType": 3},
        {"content": [], "resultType": "task"},
        {"resultType": "task", "task": {**TASK["task"], "ttlMs": 1000}},
        {"content": [{"type": "text", "text": "hi"}], "_meta": {"k": "v"}},
    ],
    "error": [{"code": -32601, "message": "nope"}, {"code": "x"}, None],
    "extra": [[1, {"a": None}], None],
}
PARAM_VALUES: dict[str, list[Any]] = {
    "name": ["a", 3, None],
    "arguments": [{}, [], {"q": "x"}],
    "taskId": ["a", 3],
    "protocolVersion": ["2025-11-25", "2025-06-18", "2024-11-05", "1900-01-01", 2025, None],
    "clientInfo": [{"name": "c", "version": "1"}, 3, {}],
    "capabilities": [{}, 3],
    "cursor": ["c", 3],
    "task": [{"ttl": 1000}, 3],
    "_meta": [None, [], "m", 3, {}],
}
META_VALUES: dict[str, list[Any]] = {
    PV: [MODERN_VERSION, LEGACY, "2025-06-18", "1900-01-01", 2026, None],
    CC: [
        {},
        {"sampling": {}},
        [],
        None,
        {"extensions": {EXT: {}}},
        {"extensions": {EXT: 1}},
        {"extensions": []},
    ],
    "progressToken": ["p", 7, -1, 7.5, True, {}, None],
}

Change = tuple[Any, ...]


def _single_changes() -> list[Change]:
    """Every change of one member: set, repeated before or after, dropped; the
    same for a member of the params and of their ``_meta``; the order reversed."""
    changes: list[Change] = [("reorder", None)]
    for key, values in VALUES.items():
        changes.append(("drop", key))
        for value in values:
            changes += [("set", key, value), ("repeat", key, value, 0), ("repeat", key, value, -1)]
    for key, values in PARAM_VALUES.items():
        changes += [("param", key, value) for value in values]
    for key, values in META_VALUES.items():
        changes.append(("meta-drop", key))
        changes += [("meta", key, value) for value in values]
    return changes


SINGLE_CHANGES = _single_changes()


def _changed(template: list[tuple[str, Any]], changes: list[Change]) -> bytes:
    """The JSON text of ``template`` after ``changes`` (a member may appear twice)."""
    members = list(template)
    for op, key, *args in changes:
        if op == "set":
            if key in dict(members):
                members = [(k, args[0] if k == key else v) for k, v in members]
            else:
                members.append((key, args[0]))
        elif op == "repeat":
            value, where = args
            members.insert(len(members) if where == -1 else 0, (key, value))
        elif op == "drop":
            members = [(k, v) for k, v in members if k != key]
        elif op == "reorder":
            if key is None:
                members.reverse()
            else:
                random.Random(key).shuffle(members)
        else:
            value = args[0] if args else None
            members = [(k, _in_params(v, op, key, value) if k == "params" else v) for k, v in members]
    body = ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in members)
    return ("{" + body + "}").encode()


def _in_params(params: Any, op: str, key: str, value: Any) -> Any:
    if not isinstance(params, dict):
        return params
    if op == "param":
        return {**params, key: value}
    meta = params.get("_meta")
    meta = dict(meta) if isinstance(meta, dict) else {}
    if op == "meta":
        meta[key] = value
    else:
        meta.pop(key, None)
    return {**params, "_meta": meta}


# ------------------------------------------------------------------ the check


def _events(events: list[Any]) -> list[Any]:
    """The events, comparable (an exception by its type and message)."""
    return [
        (e.id, e.method, e.result, type(e.error).__name__, str(e.error))
        if isinstance(e, ResponseReceived) and e.error is not None
        else e
        for e in events
    ]


def _state(core: SessionCore) -> tuple[Any, ...]:
    return (
        core.state,
        core.version,
        core.peer_info,
        core.peer_capabilities,
        core.pending_ids,
        core.in_flight_ids,
        core.outgoing.task_tokens,
        core.outgoing.progress_tokens,
    )


def _agree(name: str, messages: list[list[Change]]) -> None:
    fast, slow = _pair(name)
    for changes in messages:
        data = _changed(TEMPLATES[name], changes)
        assert _events(fast.receive(data)) == _events(slow.receive(data)), (name, data)
        assert _state(fast) == _state(slow), (name, data)


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_every_single_change_agrees(name: str) -> None:
    """Each change of one member, then the template itself (a repeated id, or
    the answer after a first one that was refused)."""
    for change in SINGLE_CHANGES:
        _agree(name, [[change], []])


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(
    name=st.sampled_from(sorted(SESSIONS)),
    messages=st.lists(
        st.lists(
            st.one_of(
                st.sampled_from(SINGLE_CHANGES),
                st.tuples(st.just("reorder"), st.integers(0, 2**16)),
            ),
            min_size=1,
            max_size=4,
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_changes_in_sequence_agree(name: str, messages: list[list[Change]]) -> None:
    """Several changes at once, in messages one after the other."""
    _agree(name, messages)


def test_the_templates_take_the_one_pass_paths() -> None:
    """Each unchanged template is one a one-pass path takes (else the test above
    would only ever compare the two-pass path with itself)."""
    for name, template in TEMPLATES.items():
        if name not in SESSIONS or name == "task call":
            continue
        core = SESSIONS[name]()
        taken: list[str] = []
        spies: dict[str, Callable[[Any, list[Any]], bool]] = {}
        for attr in _ONE_PASS:
            real = getattr(core.receiver, attr)

            def spy(
                data: Any, events: list[Any], real: Any = real, attr: str = attr, taken: Any = taken
            ) -> bool:
                took = real(data, events)
                if took:
                    taken.append(attr)
                return bool(took)

            spies[attr] = spy
        patch_receiver(core, **spies)
        events = core.receive(_changed(template, []))
        assert taken, (name, events)
        assert core.state is not State.CLOSED
