"""A server core restored from a shared session record: no handshake, the
negotiated revision and the client's declared capabilities, request ids with a
worker's prefix."""

from __future__ import annotations

import json

import pytest

from mcp_trio._core import RequestReceived, ResponseReceived, SessionCore, State
from mcp_trio._exceptions import LocalProtocolError

CAPS = {"tools": {}, "logging": {}}


def server() -> SessionCore:
    return SessionCore("server", info={"name": "srv", "version": "1"}, capabilities=CAPS)


def test_restored_core_serves_requests_without_a_handshake() -> None:
    core = server()
    core.restore("2025-06-18", peer_info={"name": "c", "version": "2"}, peer_capabilities={"sampling": {}})
    assert core.state is State.READY
    assert core.version == "2025-06-18"
    assert core.peer_info == {"name": "c", "version": "2"}
    events = core.receive(b'{"jsonrpc":"2.0","id":7,"method":"tools/list"}')
    assert [type(e) for e in events] == [RequestReceived]
    # the client's capabilities gate what the server may ask it
    _, data = core.start_request("sampling/createMessage", {"messages": [], "maxTokens": 5})
    assert json.loads(data)["method"] == "sampling/createMessage"
    with pytest.raises(LocalProtocolError, match="elicitation"):
        core.start_request("elicitation/create", {"message": "m", "requestedSchema": {"type": "object"}})


def test_restore_refuses_a_stateless_revision_and_a_second_time() -> None:
    with pytest.raises(LocalProtocolError, match="handshake-era"):
        server().restore("2026-07-28")
    core = server()
    core.restore("2025-11-25")
    with pytest.raises(Exception, match="restore"):
        core.restore("2025-11-25")
    with pytest.raises(LocalProtocolError, match="only a server"):
        SessionCore("client", info={"name": "c", "version": "1"}).restore("2025-11-25")


def test_id_prefix_makes_string_ids_that_answers_find() -> None:
    core = server()
    core.restore("2025-06-18", peer_capabilities={"roots": {}})
    core.id_prefix = "w1~"
    first, data = core.start_request("roots/list", progress=True)
    second, _ = core.start_request("ping")
    assert (first, second) == ("w1~1", "w1~2")
    assert json.loads(data)["params"]["_meta"]["progressToken"] == "w1~1"
    events = core.receive(b'{"jsonrpc":"2.0","id":"w1~1","result":{"roots":[]}}')
    assert [type(e) for e in events] == [ResponseReceived]
    assert events[0].id == "w1~1"
