"""The one-pass decode of the answer to the only pending request.

A client with one request pending decodes the envelope and the result together
(``rpc.response_decoder``); with two pending it takes the two-pass path. Every
message below goes through both and must give the same events: the fast path
may only ever hand the message over, never judge it differently.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from mcp_trio import _jsonrpc as rpc
from mcp_trio._core import ProtocolViolation, ResponseReceived, SessionCore
from mcp_trio.types import _versions
from tests._support.core import client, handshake, server

LEGACY = "2025-11-25"  # the last revision with tasks and the handshake
MODERN = [v for v in _versions.SUPPORTED_VERSIONS if _versions.is_stateless(v)]

TOOLS = {"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}
TOOLS_JSON = json.dumps(TOOLS)


def _ready_client(version: str) -> SessionCore:
    cli = client(versions=[version])
    handshake(server(), cli, version)
    return cli


def _pair(version: str, method: str, params: Any = None) -> tuple[SessionCore, SessionCore, int]:
    """Two clients with the same request pending under the same id; the second
    also has a ping pending, which keeps it on the two-pass path."""
    one, two = _ready_client(version), _ready_client(version)
    id1, _ = one.start_request(method, params)
    id2, _ = two.start_request(method, params)
    assert id1 == id2
    two.start_request("ping")
    return one, two, id1


def _summary(events: list[Any]) -> list[Any]:
    out: list[Any] = []
    for e in events:
        if isinstance(e, ResponseReceived):
            error = None if e.error is None else (type(e.error).__name__, str(e.error))
            result = None if e.result is None else (type(e.result).__name__, e.result)
            out.append(("response", e.id, e.method, result, error))
        elif isinstance(e, ProtocolViolation):
            out.append(("violation", e.message, e.data))
        else:
            out.append((type(e).__name__, getattr(e, "data", None)))
    return out


def _same(one: SessionCore, two: SessionCore, data: bytes) -> list[Any]:
    fast, slow = _summary(one.receive(data)), _summary(two.receive(data))
    assert fast == slow, data
    return fast


def _messages(id: int) -> list[bytes]:
    """Responses of every shape: valid, odd, duplicated, wrong; for request ``id``."""
    t = TOOLS_JSON
    return [
        f'{{"jsonrpc":"2.0","id":{id},"result":{t}}}',
        f'{{"result":{t},"id":{id},"jsonrpc":"2.0"}}',  # odd key order
        f' \n{{"id":{id},"result":{t},"jsonrpc":"2.0"}}\n',
        f'{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[]}},"result":{t}}}',  # duplicate, both valid
        f'{{"jsonrpc":"2.0","id":{id},"result":{{"tools":3}},"result":{t}}}',  # first invalid
        f'{{"jsonrpc":"2.0","id":{id},"result":{t},"result":{{"tools":3}}}}',  # last invalid
        f'{{"jsonrpc":"2.0","id":999,"id":{id},"result":{t}}}',  # duplicate id
        f'{{"jsonrpc":"2.0","id":{id},"id":999,"result":{t}}}',
        f'{{"jsonrpc":"2.0","jsonrpc":"1.0","id":{id},"result":{t}}}',
        f'{{"id":{id},"result":{t}}}',  # missing jsonrpc
        f'{{"jsonrpc":"1.0","id":{id},"result":{t}}}',
        f'{{"jsonrpc":2.0,"id":{id},"result":{t}}}',
        f'{{"jsonrpc":"2.0","id":"{id}","result":{t}}}',  # the id as a string
        f'{{"jsonrpc":"2.0","id":{id}.0,"result":{t}}}',  # float id
        f'{{"jsonrpc":"2.0","id":{id}.5,"result":{t}}}',
        f'{{"jsonrpc":"2.0","id":-{id},"result":{t}}}',
        f'{{"jsonrpc":"2.0","id":{2**70},"result":{t}}}',
        f'{{"jsonrpc":"2.0","id":true,"result":{t}}}',
        f'{{"jsonrpc":"2.0","id":null,"result":{t}}}',
        f'{{"jsonrpc":"2.0","result":{t}}}',
        f'{{"jsonrpc":"2.0","id":{id},"result":{t},"extra":[1,{{"a":null}}]}}',  # unknown fields
        f'{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[],"x":1,"_meta":{{"k":"v"}}}}}}',
        f'{{"jsonrpc":"2.0","id":{id},"result":{t},"method":"tools/list"}}',
        f'{{"jsonrpc":"2.0","id":{id},"result":{t},"params":{{}}}}',
        f'{{"jsonrpc":"2.0","id":{id},"result":{t},"error":{{"code":1,"message":"x"}}}}',
        f'{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"nope"}}}}',
        f'{{"jsonrpc":"2.0","id":{id},"error":{{"code":"x"}}}}',
        f'{{"jsonrpc":"2.0","id":{id}}}',
        f'{{"jsonrpc":"2.0","id":{id},"result":{t}}} trailing',
        f'{{"jsonrpc":"2.0","id":{id},"result":{t}',  # truncated
        f'{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[{{"name":"\\ud800"}}]}}}}',
        f'{{"jsonrpc":"2.0","id":{id},"result":{"[" * 5000}{"]" * 5000}}}',
        f'[{{"jsonrpc":"2.0","id":{id},"result":{t}}}]',  # a batch
        *(
            f'{{"jsonrpc":"2.0","id":{id},"result":{value}}}'
            for value in ("null", "[]", "3", "-1.5e3", '"x"', "true", "false", "{}")
        ),
    ]


@pytest.mark.parametrize("index", range(len(_messages(1))))
def test_fast_and_two_pass_paths_agree(index: int) -> None:
    one, two, id = _pair(LEGACY, "tools/list")
    data = _messages(id)[index].encode()
    _same(one, two, data)
    # Whatever happened, both sessions are left alike: the same answer again
    # is judged the same way.
    _same(one, two, f'{{"jsonrpc":"2.0","id":{id},"result":{TOOLS_JSON}}}'.encode())


def test_invalid_utf8_agrees() -> None:
    one, two, id = _pair(LEGACY, "tools/list")
    _same(one, two, b'{"jsonrpc":"2.0","id":%d,"result":{"tools":[{"name":"\xff"}]}}' % id)


def test_valid_answer_is_typed_and_clears_the_request() -> None:
    one, _two, id = _pair(LEGACY, "tools/list")
    (event,) = one.receive(f'{{"id":{id},"result":{TOOLS_JSON},"jsonrpc":"2.0"}}'.encode())
    assert isinstance(event, ResponseReceived) and event.result.tools[0].name == "a"
    (again,) = one.receive(f'{{"jsonrpc":"2.0","id":{id},"result":{TOOLS_JSON}}}'.encode())
    assert isinstance(again, ProtocolViolation) and "unknown id" in again.message


def test_untyped_result_of_a_request_without_results() -> None:
    one, two, id = _pair(LEGACY, "ping")
    _same(one, two, f'{{"jsonrpc":"2.0","id":{id},"result":{{}}}}'.encode())
    one, two, id = _pair(LEGACY, "ping")
    _same(one, two, f'{{"jsonrpc":"2.0","id":{id},"result":[1,2]}}'.encode())


@pytest.mark.parametrize("task", [False, True])
def test_task_augmented_call_picks_the_same_result(task: bool) -> None:
    params: dict[str, Any] = {"name": "t"}
    if task:
        params["task"] = {"ttl": 1000}
    one, two, id = _pair(LEGACY, "tools/call", params)
    task_result = {
        "task": {
            "taskId": "t1",
            "status": "working",
            "createdAt": "2025-01-01T00:00:00Z",
            "lastUpdatedAt": "2025-01-01T00:00:00Z",
            "ttl": 1000,
        }
    }
    events = _same(one, two, json.dumps({"jsonrpc": "2.0", "id": id, "result": task_result}).encode())
    assert events[0][0] == "response"


@pytest.mark.skipif(not MODERN, reason="no stateless revision generated")
@pytest.mark.parametrize(
    "result",
    [
        {"content": [{"type": "text", "text": "hi"}]},
        {"content": [], "resultType": "complete"},
        {"content": [], "resultType": "input_required"},
        {"resultType": "input_required", "inputRequests": {}},
        {"content": [], "resultType": 3},
        {"content": [], "resultType": "something-else"},
    ],
)
def test_modern_call_result_types_agree(result: dict[str, Any]) -> None:
    version = MODERN[0]
    clients = []
    for _ in range(2):
        cli = client()
        cli.use_modern(version, server_capabilities={"tools": {}})
        clients.append(cli)
    one, two = clients
    id, _ = one.start_request("tools/call", {"name": "t"})
    assert two.start_request("tools/call", {"name": "t"})[0] == id
    two.start_request("tools/list")
    events = _same(one, two, json.dumps({"jsonrpc": "2.0", "id": id, "result": result}).encode())
    if result.get("resultType") == "input_required" and events[0][4] is None:
        assert events[0][3][0] == "InputRequiredResult"


def test_response_decoder_is_built_once_per_type() -> None:
    t = _versions.module_for(LEGACY).ListToolsResult
    assert rpc.response_decoder(t) is rpc.response_decoder(t)
    env = rpc.response_decoder(t).decode(f'{{"jsonrpc":"2.0","id":1,"result":{TOOLS_JSON}}}'.encode())
    assert env.id == 1 and env.result.tools[0].name == "a" and env.error is msgspec.UNSET


def test_the_answer_to_the_only_request_takes_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path really runs: the two-pass envelope decoder is not called for
    a plain answer, and is for one the fast path hands over."""
    calls: list[bytes] = []
    real = rpc.decode_envelope

    def counting(data: Any) -> Any:
        calls.append(bytes(data))
        return real(data)

    one, _two, id = _pair(LEGACY, "tools/list")
    monkeypatch.setattr(rpc, "decode_envelope", counting)
    one.receive(f'{{"jsonrpc":"2.0","id":{id},"result":{TOOLS_JSON}}}'.encode())
    assert calls == []
    id, _ = one.start_request("tools/list")
    one.receive(f'{{"jsonrpc":"1.0","id":{id},"result":{TOOLS_JSON}}}'.encode())
    assert len(calls) == 1
