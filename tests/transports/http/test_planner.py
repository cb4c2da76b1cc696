"""The Streamable HTTP planner's rules, checked without a server: a request in, a plan or a
refusal out (``mcp_trio.transports.http.server._planner``; the endpoint's tests check it follows them)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_trio import _jsonrpc as rpc
from mcp_trio.transports.http._replies import _peek_body, _Reply
from mcp_trio.transports.http._request import HttpRequest
from mcp_trio.transports.http.server._planner import (
    DEFAULT_VERSION,
    PostPlan,
    messages_of,
    plan_answer,
    plan_post,
    refuse_accept,
    refuse_get_accept,
    refuse_method,
    session_id_of,
    stream_key,
)

VERSIONS = {"2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}
BOTH = "application/json, text/event-stream"
META = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}


def _request(method: str, id: Any = 1, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


def _note(method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def plan(body: Any, headers: dict[str, str] | None = None, *, stateless: bool = False) -> PostPlan | _Reply:
    raw = json.dumps(body).encode()
    http = HttpRequest("POST", {"accept": BOTH, "content-type": "application/json", **(headers or {})}, raw)
    peeked = _peek_body(raw)
    assert not isinstance(peeked, _Reply)
    messages = messages_of(peeked)
    if isinstance(messages, _Reply):
        return messages
    kinds = [m.kind for m in messages]
    return plan_post(http, peeked, messages, kinds, versions=VERSIONS, stateless=stateless, tool_headers=None)


def refused(result: object, status: int, text: str = "") -> dict[str, Any]:
    assert isinstance(result, _Reply), result
    assert result.status == status, result
    error: dict[str, Any] = json.loads(result.body)["error"] if result.body else {}
    assert text in error.get("message", ""), error
    return error


def planned(result: object) -> PostPlan:
    assert isinstance(result, PostPlan), result
    return result


def test_methods() -> None:
    assert refuse_method("POST", False) is None
    assert refuse_method("GET", False) is None
    assert refuse_method("DELETE", False) is None
    put = refuse_method("PUT", False)
    assert put is not None and put.status == 405 and put.headers == [("allow", "GET, POST, DELETE")]
    for method in ("GET", "DELETE"):
        stateless = refuse_method(method, True)
        assert stateless is not None and stateless.status == 405 and stateless.headers == [("allow", "POST")]
    assert refuse_method("POST", True) is None


@pytest.mark.parametrize(
    ("accept", "ok"),
    [
        (BOTH, True),
        ("*/*", True),
        ("application/json", False),
        ("text/event-stream", False),
        ("", False),
    ],
)
def test_a_post_accepts_both_answers(accept: str, ok: bool) -> None:
    result = refuse_accept({"accept": accept})
    if ok:
        assert result is None
    else:
        refused(result, 406, "Accept must list application/json and text/event-stream")


def test_a_get_accepts_an_event_stream() -> None:
    assert refuse_get_accept({"accept": "text/event-stream"}) is None
    refused(refuse_get_accept({"accept": "application/json"}), 406, "text/event-stream")


def test_stream_keys() -> None:
    assert stream_key(None) == "0"
    assert stream_key("") == "0"
    assert stream_key("7.12") == "7"


def test_a_request_names_its_session() -> None:
    refused(session_id_of({}, VERSIONS), 400, "Mcp-Session-Id header is required")
    refused(session_id_of({"mcp-protocol-version": "1999-01-01"}, VERSIONS), 400, "'1999-01-01'")
    assert session_id_of({"mcp-session-id": "abc", "mcp-protocol-version": "2025-06-18"}, VERSIONS) == "abc"


def test_an_empty_batch_and_a_stranger_are_refused() -> None:
    refused(plan([]), 400, "empty batch")
    error = refused(plan({"jsonrpc": "2.0", "id": True, "method": "ping"}), 400, "not a JSON-RPC request")
    assert error["code"] == rpc.INVALID_REQUEST


def test_initialize_opens_a_session_alone() -> None:
    params = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    }
    first = planned(plan(_request("initialize", **params)))
    assert first.target == "initialize" and first.is_initialize
    assert first.init_params() == params
    refused(plan([_request("initialize", **params), _request("ping", 2)]), 400, "initialize must not be part")


def test_anything_else_goes_to_its_session() -> None:
    result = planned(plan(_request("tools/list"), {"mcp-session-id": "s"}))
    assert result.target == "session" and result.init_params() is None
    batch = planned(plan([_request("ping", 1), _note("notifications/cancelled", requestId=5)]))
    assert batch.target == "session"
    assert batch.cancelled() == [5]
    refused(batch.refuse_batch("2025-06-18"), 400, "batches are not allowed in protocol version 2025-06-18")
    assert batch.refuse_batch("2025-03-26") is None
    assert batch.refuse_batch(None) is None


def test_a_stateless_revision_is_served_on_a_session_of_its_own() -> None:
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}
    modern = planned(plan(_request("tools/list", **META), headers))
    assert (modern.target, modern.version, modern.modern_version) == ("modern", "2026-07-28", "2026-07-28")
    # named only in the header: stateless still, its _meta is for the session to refuse
    header_only = planned(plan(_request("tools/list"), headers))
    assert (header_only.target, header_only.version, header_only.modern_version) == (
        "modern",
        "2026-07-28",
        None,
    )
    # with a session id it goes to that session
    assert (
        planned(plan(_request("tools/list", **META), {**headers, "mcp-session-id": "s"})).target == "session"
    )


def test_a_stateless_request_carries_headers_matching_its_body() -> None:
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "other"}
    error = refused(plan(_request("tools/call", 9, name="echo", **META), headers), 400, "Header mismatch")
    assert error["code"] == rpc.HEADER_MISMATCH
    assert "Mcp-Name" in error["message"]
    error = refused(
        plan(_request("tools/list", 3, **META), {}), 400, "MCP-Protocol-Version header is missing"
    )
    assert json.loads(refused_body(plan(_request("tools/list", 3, **META), {})))["id"] == 3


def refused_body(result: object) -> bytes:
    assert isinstance(result, _Reply)
    return result.body


def test_a_stateless_endpoint() -> None:
    refused(
        plan(_request("ping"), {"mcp-protocol-version": "1999-01-01"}, stateless=True), 400, "Unsupported"
    )
    dropped = plan(_note("notifications/initialized"), stateless=True)
    assert isinstance(dropped, _Reply) and dropped.status == 202 and not dropped.body
    init = _request("initialize", protocolVersion="2025-06-18")
    refused(plan([init, _request("ping", 2)], stateless=True), 400, "initialize must not be part")
    assert planned(plan(init, stateless=True)).version is None  # initialize: as if at no version
    default = planned(plan(_request("ping"), stateless=True))
    assert (default.target, default.version) == ("stateless", DEFAULT_VERSION)
    named = planned(plan(_request("ping"), {"mcp-protocol-version": "2025-06-18"}, stateless=True))
    assert named.version == "2025-06-18"
    batch = [_request("ping", 1), _request("ping", 2)]
    refused(
        plan(batch, {"mcp-protocol-version": "2025-06-18"}, stateless=True), 400, "batches are not allowed"
    )
    assert planned(plan(batch, stateless=True)).version == "2025-03-26"


def answer(result: object, **session: Any) -> object:
    view = {"session_version": None, "in_progress": (), "pending_streams": 0, "max_streams": 4} | session
    return plan_answer(planned(result), **view)


def test_requests_in_flight_are_bounded_and_unique() -> None:
    refused(answer(plan([_request("ping", 1), _request("ping", 1)])), 400, "share an id")
    refused(answer(plan(_request("ping", 7)), in_progress={7}), 400, "already in progress")
    refused(answer(plan(_request("ping", 7)), pending_streams=4), 429, "Too many requests in flight")
    assert answer(plan(_request("ping", 7)), pending_streams=3) == DEFAULT_VERSION


def test_the_answer_is_framed_in_the_sessions_revision() -> None:
    init = _request("initialize", protocolVersion="2025-11-25")
    assert answer(plan(init, {"mcp-protocol-version": "2025-06-18"})) == "2025-11-25"
    ping = plan(_request("ping"), {"mcp-protocol-version": "2025-06-18", "mcp-session-id": "s"})
    assert answer(ping, session_version="2025-11-25") == "2025-11-25"  # negotiated: it decides
    assert answer(ping) == "2025-06-18"
    assert answer(plan(_request("ping"))) == DEFAULT_VERSION
    modern = plan(_request("ping", **META), {"mcp-protocol-version": "2026-07-28", "mcp-method": "ping"})
    assert answer(modern, session_version="2025-06-18") == "2026-07-28"
