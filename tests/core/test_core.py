"""The sans-IO session core, driven synchronously (no event loop)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from mcp_trio import _jsonrpc as rpc
from mcp_trio._core import (
    CancelRequested,
    NotificationReceived,
    Outgoing,
    PeerInitialized,
    ProgressReceived,
    ProtocolViolation,
    RequestReceived,
    ResponseReceived,
    SessionCore,
    State,
)
from mcp_trio._exceptions import LocalProtocolError, McpError, RemoteProtocolError
from mcp_trio.types import _versions
from tests._support.core import (
    CLIENT_CAPS,
    LEGACY,
    MODERN,
    SERVER_CAPS,
    client,
    handshake,
    only,
    outgoing,
    ready_pair,
    server,
)


def request_bytes(id: Any, method: str, params: Any = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode()


# ----------------------------------------------------------------- lifecycle


@pytest.mark.parametrize("version", LEGACY)
def test_handshake_every_legacy_revision(version: str) -> None:
    srv = server()
    cli = client(versions=[version])
    _id, data = cli.start_request(
        "initialize",
        {"protocolVersion": version, "capabilities": CLIENT_CAPS, "clientInfo": cli.info},
    )
    assert cli.state is State.INITIALIZING
    events = srv.receive(data)
    [reply] = outgoing(events)
    assert reply["result"]["protocolVersion"] == version
    assert reply["result"]["serverInfo"] == {"name": "srv", "version": "1"}
    assert reply["result"]["capabilities"] == SERVER_CAPS
    init = only(events, PeerInitialized)
    assert init.peer_capabilities == CLIENT_CAPS and init.version == version
    assert srv.state is State.INITIALIZING
    cli_events = cli.receive(only(events, Outgoing).data)
    assert only(cli_events, ResponseReceived).result.protocolVersion == version
    assert cli.version == version and cli.peer_capabilities == SERVER_CAPS
    events = srv.receive(cli.notify("notifications/initialized"))
    assert only(events, NotificationReceived).method == "notifications/initialized"
    assert srv.state is State.READY


def test_server_answers_its_latest_for_an_unknown_version() -> None:
    srv = server()
    events = srv.receive(
        request_bytes(
            1,
            "initialize",
            {
                "protocolVersion": "1999-01-01",
                "capabilities": {},
                "clientInfo": {"name": "x", "version": "0"},
            },
        )
    )
    [reply] = outgoing(events)
    assert reply["result"]["protocolVersion"] == LEGACY[0]


def test_client_rejects_a_version_it_does_not_support() -> None:
    srv = server(versions=[LEGACY[0]])
    cli = client(versions=[LEGACY[-1]])
    _id, data = cli.start_request(
        "initialize", {"protocolVersion": LEGACY[-1], "capabilities": {}, "clientInfo": cli.info}
    )
    reply = only(srv.receive(data), Outgoing)
    response = only(cli.receive(reply.data), ResponseReceived)
    assert isinstance(response.error, RemoteProtocolError)
    assert LEGACY[0] in str(response.error) and "does not support" in str(response.error)
    assert cli.state is State.NEW


@pytest.mark.parametrize("params", ["x", 3, [1], {"_meta": 1.5}, {"_meta": []}])
@pytest.mark.parametrize("stage", ["before initialize", "client before initialize", "ready"])
def test_ping_with_invalid_params_is_refused_at_every_stage(stage: str, params: Any) -> None:
    """ping is answered outside the usual request path, but its params are checked like
    any other request's (-32602); valid ones (absent, {}, a _meta object) get {}."""
    if stage == "before initialize":
        side = server()
    elif stage == "client before initialize":
        side = client()
        side.start_request(
            "initialize",
            {"protocolVersion": side.legacy_versions[0], "capabilities": {}, "clientInfo": side.info},
        )
    else:
        side, _ = ready_pair()
    [reply] = outgoing(side.receive(request_bytes(1, "ping", params)))
    assert reply["id"] == 1 and reply["error"]["code"] == rpc.INVALID_PARAMS, reply
    for good in (None, {}, {"_meta": {"progressToken": "t"}}):
        [reply] = outgoing(side.receive(request_bytes(2, "ping", good)))
        assert reply == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_only_ping_before_initialize() -> None:
    srv = server()
    [reply] = outgoing(srv.receive(request_bytes(7, "tools/list")))
    assert reply["id"] == 7 and reply["error"]["code"] == rpc.INVALID_REQUEST
    assert "initialize" in reply["error"]["message"]
    [reply] = outgoing(srv.receive(request_bytes(8, "ping")))
    assert reply == {"jsonrpc": "2.0", "id": 8, "result": {}}


def test_second_initialize_is_rejected() -> None:
    srv, cli = ready_pair()
    [reply] = outgoing(
        srv.receive(
            request_bytes(
                99,
                "initialize",
                {
                    "protocolVersion": LEGACY[0],
                    "capabilities": {},
                    "clientInfo": {"name": "a", "version": "1"},
                },
            )
        )
    )
    assert reply["error"]["code"] == rpc.INVALID_REQUEST


def test_client_sends_nothing_but_initialize_before_the_handshake() -> None:
    cli = client()
    with pytest.raises(LocalProtocolError, match="before initialization"):
        cli.start_request("tools/list")


def test_server_sends_no_request_before_initialized() -> None:
    srv = server()
    cli = client()
    _id, data = cli.start_request(
        "initialize", {"protocolVersion": LEGACY[0], "capabilities": CLIENT_CAPS, "clientInfo": cli.info}
    )
    srv.receive(data)
    with pytest.raises(LocalProtocolError, match="initialized"):
        srv.start_request("sampling/createMessage", {"messages": [], "maxTokens": 5})
    srv.start_request("ping")  # allowed


# ------------------------------------------------------------- JSON-RPC errors


def test_parse_error_answers_null_id_and_session_goes_on() -> None:
    srv, cli = ready_pair()
    for bad in (b"{not json", b"\xff\xfe{}", b'{"jsonrpc": "2.0", "id": 1, "method": "ping"'):
        [reply] = outgoing(srv.receive(bad))
        assert reply["id"] is None and reply["error"]["code"] == rpc.PARSE_ERROR
    [reply] = outgoing(srv.receive(request_bytes(1, "ping")))
    assert reply["result"] == {}


@pytest.mark.parametrize(
    ("message", "expected_id"),
    [
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
        ({"jsonrpc": "1.0", "id": 4, "method": "ping"}, 4),
        ({"id": 5, "method": "ping"}, 5),
        ({"jsonrpc": "2.0", "id": 6, "method": 12}, 6),
        ({"jsonrpc": "2.0", "id": 9, "method": "ping", "result": {}}, 9),
        (42, None),
        ("ping", None),
    ],
)
def test_invalid_requests_get_32600(message: Any, expected_id: Any) -> None:
    srv, _ = ready_pair()
    [reply] = outgoing(srv.receive(json.dumps(message).encode()))
    assert reply["error"]["code"] == rpc.INVALID_REQUEST
    assert reply["id"] == expected_id


def test_unknown_method_gets_32601_with_id() -> None:
    srv, _ = ready_pair()
    [reply] = outgoing(srv.receive(request_bytes("abc", "tools/frobnicate")))
    assert reply == {
        "jsonrpc": "2.0",
        "id": "abc",
        "error": {"code": rpc.METHOD_NOT_FOUND, "message": "Method not found: tools/frobnicate"},
    }


def test_method_of_the_wrong_direction_gets_32601() -> None:
    srv, _ = ready_pair()
    [reply] = outgoing(
        srv.receive(request_bytes(3, "sampling/createMessage", {"messages": [], "maxTokens": 3}))
    )
    assert reply["error"]["code"] == rpc.METHOD_NOT_FOUND


def test_capability_not_advertised_gets_32601() -> None:
    srv, _ = ready_pair(capabilities={"tools": {}})
    [reply] = outgoing(srv.receive(request_bytes(1, "prompts/list")))
    assert reply["error"]["code"] == rpc.METHOD_NOT_FOUND
    assert "'prompts'" in reply["error"]["message"]
    [reply] = outgoing(srv.receive(request_bytes(2, "resources/subscribe", {"uri": "x:/y"})))
    assert reply["error"]["code"] == rpc.METHOD_NOT_FOUND
    events = srv.receive(request_bytes(3, "tools/list"))
    assert only(events, RequestReceived).method == "tools/list"


def test_invalid_params_get_32602_naming_the_path() -> None:
    srv, _ = ready_pair()
    [reply] = outgoing(srv.receive(request_bytes(1, "tools/call", {"name": 5})))
    assert reply["id"] == 1 and reply["error"]["code"] == rpc.INVALID_PARAMS
    assert "$.params.name" in reply["error"]["message"]
    [reply] = outgoing(srv.receive(request_bytes(2, "tools/call")))
    assert reply["error"]["code"] == rpc.INVALID_PARAMS
    [reply] = outgoing(srv.receive(request_bytes(3, "resources/read", {})))
    assert reply["error"] == {
        "code": rpc.INVALID_PARAMS,
        "message": "Invalid params: Object missing required field `uri` - at `$.params`",
    }
    [reply] = outgoing(srv.receive(request_bytes(4, "tools/call", [1])))
    assert reply["error"]["message"] == "Invalid params: Expected `object`, got `array` - at `$.params`"


def test_errors_at_the_top_level_name_the_root_path() -> None:
    srv, cli = ready_pair()
    [reply] = outgoing(srv.receive(b"42"))
    assert reply["error"] == {
        "code": rpc.INVALID_REQUEST,
        "message": "Invalid request: Expected `object`, got `int` - at `$`",
    }
    id, _ = cli.start_request("tools/list")
    resp = only(cli.receive(json.dumps({"jsonrpc": "2.0", "id": id, "error": 5}).encode()), ResponseReceived)
    assert isinstance(resp.error, RemoteProtocolError)
    assert str(resp.error).endswith("Expected `object`, got `int` - at `$.error`")


def test_valid_request_is_delivered_typed() -> None:
    srv, _ = ready_pair()
    events = srv.receive(
        request_bytes(
            1,
            "tools/call",
            {"name": "echo", "arguments": {"x": [1, 2]}, "_meta": {"progressToken": "t", "k": 1}},
        )
    )
    req = only(events, RequestReceived)
    assert req.params.name == "echo" and req.params.arguments == {"x": [1, 2]}
    assert req.progress_token == "t"
    assert req.params.meta == {"progressToken": "t", "k": 1}
    assert req.version == LEGACY[0]


def test_duplicate_in_flight_id_is_rejected_and_reusable_after_answer() -> None:
    srv, _ = ready_pair()
    only(srv.receive(request_bytes(1, "tools/list")), RequestReceived)
    [reply] = outgoing(srv.receive(request_bytes(1, "tools/list")))
    assert reply["error"]["code"] == rpc.INVALID_REQUEST and "already in use" in reply["error"]["message"]
    data = srv.respond(1, {"tools": []})
    assert json.loads(data) == {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}
    only(srv.receive(request_bytes(1, "tools/list")), RequestReceived)


def test_string_and_integer_ids_are_distinct() -> None:
    srv, _ = ready_pair()
    only(srv.receive(request_bytes(1, "tools/list")), RequestReceived)
    only(srv.receive(request_bytes("1", "tools/list")), RequestReceived)
    assert json.loads(srv.respond("1", {"tools": []}))["id"] == "1"
    assert json.loads(srv.respond(1, {"tools": []}))["id"] == 1


def test_notifications_are_never_answered() -> None:
    srv, _ = ready_pair()
    for note in (
        {"jsonrpc": "2.0", "method": "notifications/unknown"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": True}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": "x"}},
        {"jsonrpc": "1.0", "method": "notifications/initialized"},
    ):
        events = srv.receive(json.dumps(note).encode())
        assert outgoing(events) == []
        assert all(isinstance(e, ProtocolViolation) for e in events)


def test_invalid_responses_are_dropped_not_answered() -> None:
    srv, cli = ready_pair()
    for msg in (
        {"jsonrpc": "2.0", "id": 77, "result": {}},
        {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}},
        {"jsonrpc": "2.0", "id": [1], "result": {}},
    ):
        events = cli.receive(json.dumps(msg).encode())
        assert outgoing(events) == []
        assert isinstance(only(events, ProtocolViolation), ProtocolViolation)


def test_result_and_error_responses() -> None:
    srv, cli = ready_pair()
    id, data = cli.start_request("tools/list")
    req = only(srv.receive(data), RequestReceived)
    resp = only(
        cli.receive(srv.respond(req.id, {"tools": [{"name": "a", "inputSchema": {"type": "object"}}]})),
        ResponseReceived,
    )
    assert resp.id == id and resp.result.tools[0].name == "a"
    id, data = cli.start_request("tools/call", {"name": "x"})
    req = only(srv.receive(data), RequestReceived)
    resp = only(cli.receive(srv.error(req.id, -32602, "Unknown tool: x", {"name": "x"})), ResponseReceived)
    assert isinstance(resp.error, McpError)
    assert (resp.error.code, resp.error.message, resp.error.data) == (
        -32602,
        "Unknown tool: x",
        {"name": "x"},
    )


def test_invalid_result_is_a_remote_protocol_error() -> None:
    srv, cli = ready_pair()
    id, _ = cli.start_request("tools/list")
    resp = only(
        cli.receive(json.dumps({"jsonrpc": "2.0", "id": id, "result": {"tools": 3}}).encode()),
        ResponseReceived,
    )
    assert isinstance(resp.error, RemoteProtocolError) and "$.result.tools" in str(resp.error)


def test_handler_result_is_validated() -> None:
    srv, _ = ready_pair()
    only(srv.receive(request_bytes(1, "tools/list")), RequestReceived)
    with pytest.raises(LocalProtocolError, match="invalid result"):
        srv.respond(1, {"tools": "nope"})
    # still in flight: can be answered with an error
    assert json.loads(srv.error(1, rpc.INTERNAL_ERROR, "boom"))["error"]["code"] == rpc.INTERNAL_ERROR


def test_outgoing_ids_never_repeat() -> None:
    srv, cli = ready_pair()
    ids = set()
    for _ in range(500):
        id, _data = cli.start_request("ping")
        assert id not in ids
        ids.add(id)
        if len(ids) % 3 == 0:
            cli.cancel(id)


# ------------------------------------------------------------ capabilities out


def test_outgoing_requests_need_the_peer_capability() -> None:
    srv, cli = ready_pair(capabilities={"tools": {}})
    with pytest.raises(LocalProtocolError, match="'prompts'"):
        cli.start_request("prompts/list")
    cli.start_request("tools/list")
    with pytest.raises(LocalProtocolError, match="'elicitation'"):
        srv.start_request(
            "elicitation/create", {"message": "hi", "requestedSchema": {"type": "object", "properties": {}}}
        )
    srv.start_request("sampling/createMessage", {"messages": [], "maxTokens": 10})


def test_outgoing_notifications_need_our_capability() -> None:
    srv, cli = ready_pair(capabilities={"tools": {}})
    with pytest.raises(LocalProtocolError, match="listChanged"):
        srv.notify("notifications/tools/list_changed")
    with pytest.raises(LocalProtocolError, match="logging"):
        srv.notify("notifications/message", {"level": "info", "data": "x"})
    cli.notify("notifications/roots/list_changed")


def test_outgoing_params_are_validated() -> None:
    srv, cli = ready_pair()
    with pytest.raises(LocalProtocolError, match=r"\$\.params\.name"):
        cli.start_request("tools/call", {"name": 3})


# ------------------------------------------------------------ cancellation


def test_cancellation_of_an_in_flight_request() -> None:
    srv, cli = ready_pair()
    id, data = cli.start_request("tools/call", {"name": "slow"})
    only(srv.receive(data), RequestReceived)
    note = cli.cancel(id, "user gave up")
    assert json.loads(note) == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": "user gave up"},
    }
    cancel = only(srv.receive(note), CancelRequested)
    assert cancel.id == id and cancel.reason == "user gave up"
    assert srv.respond(id, {"content": []}) is None  # nothing after a cancellation
    # a late answer is ignored by the client
    events = cli.receive(json.dumps({"jsonrpc": "2.0", "id": id, "result": {"content": []}}).encode())
    assert not any(isinstance(e, ResponseReceived) for e in events)


def test_cancel_for_unknown_or_finished_ids_is_ignored() -> None:
    srv, cli = ready_pair()
    assert (
        srv.receive(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":123}}') == []
    )
    only(srv.receive(request_bytes(5, "tools/list")), RequestReceived)
    srv.respond(5, {"tools": []})
    assert srv.receive(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}') == []


def test_initialize_cannot_be_cancelled() -> None:
    cli = client()
    id, _ = cli.start_request(
        "initialize", {"protocolVersion": LEGACY[0], "capabilities": {}, "clientInfo": cli.info}
    )
    assert cli.cancel(id) is None


# ------------------------------------------------------------------ progress


def test_progress_round_trip() -> None:
    srv, cli = ready_pair()
    id, data = cli.start_request("tools/call", {"name": "long"}, progress=True)
    assert json.loads(data)["params"]["_meta"] == {"progressToken": id}
    req = only(srv.receive(data), RequestReceived)
    assert req.progress_token == id
    p1 = srv.progress(id, 0.5, 2, "half")
    got = only(cli.receive(p1), ProgressReceived)
    assert (got.id, got.progress, got.total, got.message) == (id, 0.5, 2.0, "half")
    with pytest.raises(LocalProtocolError, match="increase"):
        srv.progress(id, 0.5)
    # a peer that sends a decreasing value is ignored
    events = cli.receive(
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%d,"progress":0.1}}'
        % id
    )
    assert isinstance(only(events, ProtocolViolation), ProtocolViolation)
    srv.respond(id, {"content": []})
    assert srv.progress(id, 1.0) is None  # nothing after the response


def test_no_progress_without_a_token() -> None:
    srv, cli = ready_pair()
    id, data = cli.start_request("tools/list")
    srv.receive(data)
    assert srv.progress(id, 1) is None


def test_progress_keeps_the_callers_meta() -> None:
    srv, cli = ready_pair()
    _id, data = cli.start_request("tools/call", {"name": "x", "_meta": {"trace": "abc"}}, progress=True)
    meta = json.loads(data)["params"]["_meta"]
    assert meta["trace"] == "abc" and "progressToken" in meta


def test_server_requests_are_checked_against_the_negotiated_revision() -> None:
    """elicitation/create exists from 2025-06-18 on: a 2024-11-05 session may not send it,
    whatever the client advertises."""
    elicit = {"message": "x", "requestedSchema": {"type": "object", "properties": {}}}
    srv = server(capabilities={"tools": {}})
    cli = client(capabilities={"elicitation": {}}, versions=["2024-11-05"])
    handshake(srv, cli)
    with pytest.raises(LocalProtocolError, match="elicitation/create.*2024-11-05"):
        srv.start_request("elicitation/create", elicit)
    # and a client of that revision refuses it when it arrives anyway
    [reply] = outgoing(cli.receive(request_bytes("e1", "elicitation/create", elicit)))
    assert reply["id"] == "e1" and reply["error"]["code"] == rpc.METHOD_NOT_FOUND
    # the same request in a 2025-06-18 session is fine
    srv = server(capabilities={"tools": {}})
    cli = client(capabilities={"elicitation": {}}, versions=["2025-06-18"])
    handshake(srv, cli)
    _id, data = srv.start_request("elicitation/create", elicit)
    assert only(cli.receive(data), RequestReceived).method == "elicitation/create"


def test_results_are_checked_against_the_negotiated_revision() -> None:
    """resource_link content blocks exist from 2025-06-18 on."""
    link = {"content": [{"type": "resource_link", "uri": "file:///a", "name": "a"}]}
    srv, cli = ready_pair("2025-03-26")
    id, data = cli.start_request("tools/call", {"name": "x"})
    only(srv.receive(data), RequestReceived)
    # our own handler's result is refused before it is sent ...
    with pytest.raises(LocalProtocolError, match=r"invalid result for tools/call.*\$\.result\.content\[0\]"):
        srv.respond(id, link)
    # ... and the peer's is refused when it arrives
    reply = {"jsonrpc": "2.0", "id": id, "result": link}
    resp = only(cli.receive(json.dumps(reply).encode()), ResponseReceived)
    assert isinstance(resp.error, RemoteProtocolError)
    assert "Invalid value 'resource_link' - at `$.result.content[0].type`" in str(resp.error)
    # the same result in a 2025-06-18 session arrives whole
    srv, cli = ready_pair("2025-06-18")
    id, data = cli.start_request("tools/call", {"name": "x"})
    only(srv.receive(data), RequestReceived)
    resp = only(cli.receive(srv.respond(id, link)), ResponseReceived)
    assert resp.error is None and resp.result.content[0].uri == "file:///a"


# ------------------------------------------------------------------- batches


def test_batches_are_rejected_without_batching() -> None:
    checked = []
    for version in LEGACY:
        if _versions.supports_batching(version):
            continue
        srv, _ = ready_pair(version)
        [reply] = outgoing(srv.receive(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]'))
        assert reply["id"] is None and reply["error"]["code"] == rpc.INVALID_REQUEST
        checked.append(version)
    for version in MODERN:
        meta = {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        srv = server()
        member = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}}
        # as the first message, and once the server has answered a stateless request
        [reply] = outgoing(srv.receive(json.dumps([member]).encode()))
        assert reply["id"] is None and reply["error"]["code"] == rpc.INVALID_REQUEST
        only(srv.receive(request_bytes(1, "tools/list", {"_meta": meta})), RequestReceived)
        assert srv.version == version
        [reply] = outgoing(srv.receive(json.dumps([member, {**member, "id": 3}]).encode()))
        assert reply["id"] is None and reply["error"]["code"] == rpc.INVALID_REQUEST
        assert version in reply["error"]["message"]
        checked.append(version)
    assert set(checked) == {v for v in _versions.SUPPORTED_VERSIONS if not _versions.supports_batching(v)}


BATCH_VERSION = next(v for v in LEGACY if _versions.supports_batching(v))


def test_batch_answers_as_an_array() -> None:
    srv, _ = ready_pair(BATCH_VERSION)
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        {"jsonrpc": "2.0", "id": 3, "method": "nope"},
        {"jsonrpc": "2.0", "id": 4, "method": "prompts/list"},
    ]
    events = srv.receive(json.dumps(batch).encode())
    assert outgoing(events) == []
    assert sorted(e.id for e in events if isinstance(e, RequestReceived)) == [1, 4]
    assert srv.respond(4, {"prompts": []}) is None
    final = json.loads(srv.respond(1, {"tools": []}))
    assert isinstance(final, list)
    by_id = {m["id"]: m for m in final}
    assert set(by_id) == {1, 2, 3, 4}
    assert by_id[3]["error"]["code"] == rpc.METHOD_NOT_FOUND and by_id[2]["result"] == {}


def test_batch_of_notifications_gets_no_reply() -> None:
    srv, _ = ready_pair(BATCH_VERSION)
    events = srv.receive(b'[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]')
    assert outgoing(events) == []


def test_batch_with_cancelled_member() -> None:
    srv, _ = ready_pair(BATCH_VERSION)
    srv.receive(
        b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]'
    )
    srv.receive(b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}')
    assert srv.drop(2) is None
    assert [m["id"] for m in json.loads(srv.respond(1, {"tools": []}))] == [1]


def test_empty_batch_and_initialize_in_batch() -> None:
    srv, _ = ready_pair(BATCH_VERSION)
    [reply] = outgoing(srv.receive(b"[]"))
    assert reply["error"]["code"] == rpc.INVALID_REQUEST
    fresh = server(versions=[BATCH_VERSION])
    [reply] = outgoing(fresh.receive(b'[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}]'))
    assert reply["error"]["code"] == rpc.INVALID_REQUEST


# ------------------------------------------------------------ stateless era


@pytest.mark.skipif(not MODERN, reason="no stateless revision generated")
class TestModern:
    version = MODERN[0] if MODERN else ""

    def meta(self, **extra: Any) -> dict[str, Any]:
        return {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": self.version,
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
                **extra,
            }
        }

    def test_request_without_handshake(self) -> None:
        srv = server()
        req = only(srv.receive(request_bytes(1, "tools/list", self.meta())), RequestReceived)
        assert req.version == self.version and req.client_capabilities == {"elicitation": {}}
        assert srv.state is State.MODERN

    def test_unsupported_version(self) -> None:
        srv = server()
        params = self.meta()
        params["_meta"]["io.modelcontextprotocol/protocolVersion"] = "1900-01-01"
        [reply] = outgoing(srv.receive(request_bytes(1, "tools/list", params)))
        assert reply["error"]["code"] == rpc.UNSUPPORTED_PROTOCOL_VERSION
        assert reply["error"]["data"]["requested"] == "1900-01-01"
        assert self.version in reply["error"]["data"]["supported"]

    def test_missing_client_capabilities(self) -> None:
        srv = server()
        params = self.meta()
        del params["_meta"]["io.modelcontextprotocol/clientCapabilities"]
        [reply] = outgoing(srv.receive(request_bytes(1, "tools/list", params)))
        assert reply["error"]["code"] == rpc.INVALID_PARAMS

    def test_discover_is_answered_by_the_core(self) -> None:
        srv = server(instructions="be nice")
        [reply] = outgoing(srv.receive(request_bytes(1, "server/discover", self.meta())))
        result = reply["result"]
        assert result["supportedVersions"] == list(_versions.SUPPORTED_VERSIONS)
        assert result["capabilities"] == SERVER_CAPS and result["instructions"] == "be nice"
        assert result["resultType"] == "complete"
        assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "srv"

    def test_client_adds_meta_and_result_type(self) -> None:
        srv = server()
        cli = client()
        cli.use_modern(self.version, server_capabilities=SERVER_CAPS)
        id, data = cli.start_request("tools/list")
        meta = json.loads(data)["params"]["_meta"]
        assert meta["io.modelcontextprotocol/protocolVersion"] == self.version
        assert meta["io.modelcontextprotocol/clientCapabilities"] == CLIENT_CAPS
        assert meta["io.modelcontextprotocol/clientInfo"] == {"name": "cli", "version": "1"}
        only(srv.receive(data), RequestReceived)
        reply = srv.respond(id, {"tools": [], "ttlMs": 0, "cacheScope": "public"})
        assert json.loads(reply)["result"]["resultType"] == "complete"
        resp = only(cli.receive(reply), ResponseReceived)
        assert resp.result.tools == []

    def test_no_ping_and_no_server_requests(self) -> None:
        srv = server()
        srv.receive(request_bytes(1, "tools/list", self.meta()))
        [reply] = outgoing(srv.receive(request_bytes(2, "ping", self.meta())))
        assert reply["error"]["code"] == rpc.METHOD_NOT_FOUND
        with pytest.raises(LocalProtocolError, match="InputRequiredResult"):
            srv.start_request("sampling/createMessage", {"messages": [], "maxTokens": 1})

    def test_the_client_sends_no_responses(self) -> None:
        """2026-07-28: "The client MUST NOT send JSON-RPC responses": junk, an oversized
        message or a stray request from the server are reported, never answered."""
        cli = client()
        cli.use_modern(self.version, server_capabilities=SERVER_CAPS)
        for events in (
            cli.receive(b"not json"),
            cli.receive(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'),
            cli.receive(b'{"jsonrpc": "2.0", "id": 2, "method": "roots/list"}'),
            cli.framing_error("message too large"),
        ):
            assert outgoing(events) == []
            assert isinstance(only(events, ProtocolViolation), ProtocolViolation)
        # the earlier revisions answer the same junk with -32700
        _srv, legacy = ready_pair()
        [reply] = outgoing(legacy.receive(b"not json"))
        assert reply["error"]["code"] == rpc.PARSE_ERROR

    def test_legacy_initialize_after_a_modern_probe(self) -> None:
        srv = server()
        srv.receive(request_bytes(1, "server/discover", self.meta()))
        events = srv.receive(
            request_bytes(
                2,
                "initialize",
                {
                    "protocolVersion": LEGACY[0],
                    "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"},
                },
            )
        )
        assert only(events, PeerInitialized).version == LEGACY[0]


def test_closed_core_accepts_nothing() -> None:
    srv, cli = ready_pair()
    id, _ = cli.start_request("tools/list")
    assert cli.close() == [id]
    assert cli.receive(request_bytes(1, "ping")) == []
    with pytest.raises(LocalProtocolError, match="closed"):
        cli.start_request("ping")


def test_extra_methods_are_delivered_as_json() -> None:
    srv = server(extra_methods={"acme/echo"})
    cli = client(extra_methods={"acme/echo"})
    handshake(srv, cli)
    id, data = cli.start_request("acme/echo", {"x": 1})
    req = only(srv.receive(data), RequestReceived)
    assert req.params == {"x": 1} and req.spec is None
    resp = only(cli.receive(srv.respond(id, {"y": 2})), ResponseReceived)
    assert resp.result == {"y": 2}


def test_envelope_rejects_bool_ids_at_the_type_level() -> None:
    with pytest.raises(msgspec.ValidationError):
        rpc.decode_envelope(b'{"jsonrpc":"2.0","id":false,"method":"ping"}')


def test_too_deep_or_not_utf8_is_a_parse_error_not_a_crash() -> None:
    """Nesting deeper than the decoder goes, and bytes that are not UTF-8 inside a part
    decoded late (_meta), are answered -32700 like any other bad JSON text."""
    for version in ("2025-11-25", "2026-07-28"):
        core = SessionCore("server", info={"name": "s", "version": "1"}, capabilities={"tools": {}})
        deep = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":' + b"[" * 5000 + b"]" * 5000 + b"}"
        meta = b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"x":"\xff"}}}'
        if version == "2026-07-28":
            meta = meta.replace(b'"x"', b'"io.modelcontextprotocol/protocolVersion":"2026-07-28","x"')
        for data in (deep, meta):
            events = core.receive(data)
            (out,) = [e for e in events if isinstance(e, Outgoing)]
            reply = msgspec.json.decode(out.data)
            assert reply["error"]["code"] == -32700 and reply["id"] is None, reply


def test_not_utf8_in_a_skipped_member_is_a_parse_error() -> None:
    """Invalid UTF-8 in a member no decoder reads (an unknown one, a batch member's, a
    response's) is a parse error too, on the one-pass and two-pass paths alike, and
    the session goes on."""
    core = SessionCore("server", info={"name": "s", "version": "1"}, capabilities={"tools": {}})
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-03-26",
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        },
    }
    core.receive(msgspec.json.encode(init))
    core.receive(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    for data in (
        b'{"jsonrpc":"2.0","id":"u","method":"ping","x":"\xff"}',
        b'{"jsonrpc":"2.0","id":"v","method":"tools/list","x":"\xc3("}',
        b'{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"a"},"x":["\xed\xa0\x80"]}',
        b'[{"jsonrpc":"2.0","id":"b","method":"ping","x":"\xff"}]',
        b'{"jsonrpc":"2.0","id":"n","method":"unknown/method","x":"\xff"}',
    ):
        (out,) = [e for e in core.receive(data) if isinstance(e, Outgoing)]
        reply = msgspec.json.decode(out.data)
        assert reply == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error: the message is not valid UTF-8"},
        }, (data, reply)
    (out,) = core.receive('{"jsonrpc":"2.0","id":"ok","method":"ping","x":"é"}'.encode())
    assert msgspec.json.decode(out.data) == {"jsonrpc": "2.0", "id": "ok", "result": {}}
