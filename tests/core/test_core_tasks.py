"""The core's part in tasks, driven synchronously: the Tasks extension's registry,
gates and result decoding, and 2025-11-25 task progress tokens."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_trio import _jsonrpc as rpc
from mcp_trio._core import (
    NotificationReceived,
    ProtocolViolation,
    RequestReceived,
    ResponseReceived,
)
from mcp_trio._exceptions import LocalProtocolError, RemoteProtocolError
from mcp_trio.types import _versions, ext_tasks
from tests._support.core import client, only, outgoing, ready_pair, server

MODERN = "2026-07-28"
EXT = ext_tasks.EXTENSION_ID
WITH_EXT = {"tools": {}, "extensions": {EXT: {}}}
TASK = {
    "taskId": "t1",
    "status": "working",
    "createdAt": "2026-01-01T00:00:00Z",
    "lastUpdatedAt": "2026-01-01T00:00:00Z",
    "ttlMs": 1000,
}


def modern_request(id: int, method: str, params: dict[str, Any], caps: dict[str, Any]) -> bytes:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps,
    }
    return json.dumps(
        {"jsonrpc": "2.0", "id": id, "method": method, "params": {**params, "_meta": meta}}
    ).encode()


def test_registry_merges_the_extension_only_where_it_applies() -> None:
    ext = frozenset({EXT})
    merged = _versions.methods_for(MODERN, ext)
    assert {"tasks/get", "tasks/update", "tasks/cancel", "notifications/tasks"} <= set(merged)
    assert merged["tools/call"].results[-1] is ext_tasks.CreateTaskResult
    assert merged["tasks/get"].extension == EXT
    plain = _versions.methods_for(MODERN)
    assert "tasks/get" not in plain and ext_tasks.CreateTaskResult not in plain["tools/call"].results
    # the extension builds on the stateless revisions only; unknown ones are ignored
    assert _versions.methods_for("2025-11-25", ext) is _versions.module_for("2025-11-25").METHODS
    assert _versions.methods_for(MODERN, frozenset({"x.example/unknown"})) is plain
    assert server(capabilities=WITH_EXT).extensions == ext
    assert server(capabilities={"extensions": {"x.example/unknown": {}}}).extensions == frozenset()


def test_extension_methods_need_the_servers_extension() -> None:
    srv = server(capabilities={"tools": {}})
    [reply] = outgoing(
        srv.receive(modern_request(1, "tasks/get", {"taskId": "a"}, {"extensions": {EXT: {}}}))
    )
    assert reply["error"]["code"] == rpc.METHOD_NOT_FOUND


def test_extension_methods_need_the_clients_declaration_in_that_request() -> None:
    srv = server(capabilities=WITH_EXT)
    [reply] = outgoing(srv.receive(modern_request(1, "tasks/get", {"taskId": "a"}, {})))
    assert reply["error"]["code"] == rpc.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert reply["error"]["data"] == {"requiredCapabilities": {"extensions": {EXT: {}}}}
    event = only(
        srv.receive(modern_request(2, "tasks/get", {"taskId": "a"}, {"extensions": {EXT: {}}})),
        RequestReceived,
    )
    assert isinstance(event.params, ext_tasks.GetTaskRequestParams) and event.params.taskId == "a"
    # invalid params of an extension method: -32602 like any other
    [reply] = outgoing(
        srv.receive(modern_request(3, "tasks/update", {"taskId": "a"}, {"extensions": {EXT: {}}}))
    )
    assert reply["error"]["code"] == rpc.INVALID_PARAMS


def test_a_task_result_goes_only_to_a_declaring_client() -> None:
    srv = server(capabilities=WITH_EXT)
    srv.receive(modern_request(1, "tools/call", {"name": "x"}, {}))
    with pytest.raises(LocalProtocolError, match="did not declare"):
        srv.respond(1, {**TASK, "resultType": "task"})
    srv.error(1, rpc.INTERNAL_ERROR, "no")
    srv.receive(modern_request(2, "tools/call", {"name": "x"}, {"extensions": {EXT: {}}}))
    reply = json.loads(srv.respond(2, {**TASK, "resultType": "task"}) or b"")
    assert reply["result"]["resultType"] == "task"
    # a Struct result is checked too
    srv.receive(modern_request(3, "tools/call", {"name": "x"}, {}))
    with pytest.raises(LocalProtocolError):
        srv.respond(3, ext_tasks.CreateTaskResult(**TASK))


def test_client_decodes_task_results_by_result_type() -> None:
    cli = client(capabilities={"extensions": {EXT: {}}})
    cli.use_modern(MODERN, server_capabilities=WITH_EXT)
    id, data = cli.start_request("tools/call", {"name": "x"})
    assert json.loads(data)["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] == {
        "extensions": {EXT: {}}
    }
    reply = rpc.encode_response(id, {**TASK, "resultType": "task"})
    result = only(cli.receive(reply), ResponseReceived).result
    assert isinstance(result, ext_tasks.CreateTaskResult) and result.ttlMs == 1000
    id, _ = cli.start_request("tools/call", {"name": "x"})
    reply = rpc.encode_response(id, {"content": [], "resultType": "complete"})
    assert type(only(cli.receive(reply), ResponseReceived).result).__name__ == "CallToolResult"
    id, _ = cli.start_request("tasks/get", {"taskId": "t1"})
    reply = rpc.encode_response(
        id, {**TASK, "status": "completed", "result": {"content": []}, "resultType": "complete"}
    )
    got = only(cli.receive(reply), ResponseReceived).result
    assert isinstance(got, ext_tasks.GetTaskResult) and got.result == {"content": []}


def test_client_without_the_extension_cannot_use_it() -> None:
    cli = client(capabilities={})
    cli.use_modern(MODERN, server_capabilities=WITH_EXT)
    with pytest.raises(LocalProtocolError):
        cli.start_request("tasks/get", {"taskId": "t1"})
    id, _ = cli.start_request("tools/call", {"name": "x"})
    reply = rpc.encode_response(id, {**TASK, "resultType": "task"})
    assert isinstance(only(cli.receive(reply), ResponseReceived).error, RemoteProtocolError)
    # a client with the extension, against a server without it
    cli = client(capabilities={"extensions": {EXT: {}}})
    cli.use_modern(MODERN, server_capabilities={"tools": {}})
    with pytest.raises(LocalProtocolError, match="extensions"):
        cli.start_request("tasks/get", {"taskId": "t1"})


def test_legacy_task_progress_token_outlives_the_response() -> None:
    srv, cli = ready_pair(
        "2025-11-25", capabilities={"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}
    )
    id, data = cli.start_request("tools/call", {"name": "x", "task": {}}, progress=True)
    request = only(srv.receive(data), RequestReceived)
    token = request.progress_token
    created = {
        "task": {
            "taskId": "t1",
            "status": "working",
            "createdAt": "x",
            "lastUpdatedAt": "x",
            "ttl": None,
        }
    }
    response = only(cli.receive(srv.respond(id, created) or b""), ResponseReceived)
    assert type(response.result).__name__ == "CreateTaskResult"
    progress = srv.notify("notifications/progress", {"progressToken": token, "progress": 1})
    note = only(cli.receive(progress), NotificationReceived)
    assert note.method == "notifications/progress" and note.params.progress == 1
    status = srv.notify(
        "notifications/tasks/status",
        {
            "taskId": "t1",
            "status": "completed",
            "createdAt": "x",
            "lastUpdatedAt": "x",
            "ttl": None,
        },
    )
    only(cli.receive(status), NotificationReceived)
    only(cli.receive(progress), ProtocolViolation)  # the task is over: the token is forgotten


def test_legacy_task_request_answered_normally_is_decoded_normally() -> None:
    srv, cli = ready_pair("2025-11-25")
    id, data = cli.start_request("tools/call", {"name": "x", "task": {"ttl": 5}})
    srv.receive(data)
    response = only(cli.receive(srv.respond(id, {"content": []}) or b""), ResponseReceived)
    assert type(response.result).__name__ == "CallToolResult"
