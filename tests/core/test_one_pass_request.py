"""The one-pass decode of requests on a server whose revision is settled.

Every message goes to two servers in the same state: one as built, one with
its one-pass path switched off (the two-pass path is the reference). Their
events and their later behaviour must be the same: the fast path may only
ever hand a message over, never judge it differently.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_trio._core import RequestReceived, SessionCore, State
from tests._support.core import client, handshake, patch_receiver, server

LEGACY = "2025-11-25"
BATCHING = "2025-03-26"
MODERN_VERSION = "2026-07-28"

CALL = {"name": "search", "arguments": {"q": "x", "n": [1, 2.5, None, True]}}


def _legacy(version: str) -> SessionCore:
    srv = server()
    handshake(srv, client(versions=[version]), version)
    return srv


def _modern() -> SessionCore:
    srv = server()
    srv.receive(_modern_call(0))  # settles the session on the stateless revision
    assert srv.state is State.MODERN
    return srv


def _pair(make: Any, *args: Any) -> tuple[SessionCore, SessionCore]:
    one, two = make(*args), make(*args)
    patch_receiver(two, _receive_known_request=lambda data, events: False)
    return one, two


def _same(one: SessionCore, two: SessionCore, data: bytes) -> list[Any]:
    fast, slow = one.receive(data), two.receive(data)
    assert fast == slow, data
    return fast


def _meta(**extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
        **extra,
    }


def _modern_call(id: Any, **meta: Any) -> bytes:
    params = {**CALL, "_meta": _meta(**meta)}
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).encode()


def _legacy_messages() -> list[str]:
    c = json.dumps(CALL)
    return [
        f'{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{c}}}',
        f'{{"params":{c},"id":5,"jsonrpc":"2.0","method":"tools/call"}}',  # odd key order
        f' {{"method":"tools/call","params":{c},"jsonrpc":"2.0","id":5}}\r\n',
        f'{{"jsonrpc":"2.0","id":5,"method":"tools/call","method":"tools/call","params":{c}}}',
        f'{{"jsonrpc":"2.0","id":5,"method":"tools/call","method":"tools/list","params":{c}}}',
        f'{{"jsonrpc":"2.0","id":5,"method":"tools/list","method":"tools/call","params":{c}}}',
        f'{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":3}},"params":{c}}}',
        f'{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{c},"params":{{"name":3}}}}',
        f'{{"jsonrpc":"2.0","id":5,"id":6,"method":"tools/call","params":{c}}}',
        f'{{"id":5,"method":"tools/call","params":{c}}}',  # missing jsonrpc
        f'{{"jsonrpc":"1.0","id":5,"method":"tools/call","params":{c}}}',
        f'{{"jsonrpc":"2.0","id":"5","method":"tools/call","params":{c}}}',
        f'{{"jsonrpc":"2.0","id":5.0,"method":"tools/call","params":{c}}}',
        f'{{"jsonrpc":"2.0","id":-5,"method":"tools/call","params":{c}}}',
        f'{{"jsonrpc":"2.0","id":{2**70},"method":"tools/call","params":{c}}}',
        f'{{"jsonrpc":"2.0","id":1e400,"method":"tools/call","params":{c}}}',
        f'{{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{c}}}',
        f'{{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{c}}}',
        f'{{"jsonrpc":"2.0","id":[5],"method":"tools/call","params":{c}}}',
        f'{{"jsonrpc":"2.0","method":"tools/call","params":{c}}}',  # a notification
        f'{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{c},"extra":{{"a":[]}}}}',
        '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"a","zzz":1}}',
        f'{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{c},"result":{{}}}}',
        f'{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{c},"error":{{"code":1,"message":"x"}}}}',
        '{"jsonrpc":"2.0","id":5,"method":"tools/call"}',  # required params missing
        '{"jsonrpc":"2.0","id":5,"method":"tools/list"}',  # optional params missing
        '{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"cursor":"c"}}',
        '{"jsonrpc":"2.0","id":5,"method":"ping"}',
        '{"jsonrpc":"2.0","id":5,"method":"initialize","params":{}}',
        '{"jsonrpc":"2.0","id":5,"method":"no/such","params":{}}',
        '{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{}}',  # wrong direction
        '{"jsonrpc":"2.0","id":5,"method":7,"params":{}}',
        *(
            f'{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{value}}}'
            for value in ("null", "[]", '["search"]', "3", "-1.5", '"x"', "true", "{}")
        ),
        *(
            f'{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"a","_meta":{m}}}}}'
            for m in (
                '{"progressToken":"p"}',
                '{"progressToken":7}',
                '{"progressToken":7.5}',
                '{"progressToken":true}',
                '{"progressToken":{}}',
                "{}",
                "null",
                "[]",
                '"m"',
            )
        ),
        f'{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{c}}} trailing',
        f'{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{c}',  # truncated
        '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"\\ud800"}}',
        '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"a","arguments":'
        + '{"a":' * 3000
        + "1"
        + "}" * 3000
        + "}}",
        f'[{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{c}}}]',
        f'[{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{c}}},'
        f'{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{c}}}]',
        "[]",
    ]


@pytest.mark.parametrize("version", [LEGACY, BATCHING])
@pytest.mark.parametrize("index", range(len(_legacy_messages())))
def test_legacy_fast_and_two_pass_paths_agree(version: str, index: int) -> None:
    one, two = _pair(_legacy, version)
    data = _legacy_messages()[index].encode()
    _same(one, two, data)
    # Both are left alike: the same request again (a duplicate id if the first
    # was accepted) is judged the same way.
    _same(one, two, data)


def test_invalid_utf8_agrees() -> None:
    one, two = _pair(_legacy, LEGACY)
    _same(one, two, b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"\xff"}}')
    _same(one, two, b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"a"},"x":"\xff"}')


def test_a_valid_request_is_delivered_typed_with_its_token() -> None:
    one, _ = _pair(_legacy, LEGACY)
    data = (
        b'{"method":"tools/call","params":{"name":"a","_meta":{"progressToken":"p"}},"id":9,"jsonrpc":"2.0"}'
    )
    (req,) = one.receive(data)
    assert isinstance(req, RequestReceived)
    assert (req.id, req.method, req.params.name, req.progress_token, req.version) == (
        9,
        "tools/call",
        "a",
        "p",
        LEGACY,
    )
    (again,) = one.receive(data)
    assert b"already in use" in again.data


def test_the_fast_path_really_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain request never reaches the two-pass envelope decoder."""
    from mcp_trio import _jsonrpc as rpc

    srv = _legacy(LEGACY)
    calls: list[Any] = []
    real = rpc.decode_envelope
    monkeypatch.setattr(rpc, "decode_envelope", lambda data: calls.append(data) or real(data))
    srv.receive(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}')
    assert calls == []
    srv.receive(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":3}}')
    assert len(calls) == 1


MODERN_CASES: list[bytes] = [
    _modern_call(5),
    _modern_call(5, progressToken="p"),
    _modern_call(5, **{"io.modelcontextprotocol/protocolVersion": "2025-11-25"}),
    _modern_call(5, **{"io.modelcontextprotocol/protocolVersion": "1900-01-01"}),
    _modern_call(5, **{"io.modelcontextprotocol/protocolVersion": 2026}),
    _modern_call(5, **{"io.modelcontextprotocol/clientCapabilities": []}),
    _modern_call(5, **{"io.modelcontextprotocol/clientCapabilities": None}),
    _modern_call(5, **{"io.modelcontextprotocol/clientCapabilities": {"extensions": {"x": {}}}}),
    _modern_call(None),
    b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"a"}}',
    b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"a","_meta":null}}',
    b'{"jsonrpc":"2.0","id":5,"method":"tools/list"}',
    b'{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":{}}}',
    b'{"jsonrpc":"2.0","id":5,"method":"initialize","params":{}}',
    json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": _meta()}}).encode(),
    json.dumps(
        {"jsonrpc": "2.0", "id": 5, "method": "server/discover", "params": {"_meta": _meta()}}
    ).encode(),
    json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"_meta": _meta()}}).encode(),
]


@pytest.mark.parametrize("index", range(len(MODERN_CASES)))
def test_modern_fast_and_two_pass_paths_agree(index: int) -> None:
    one, two = _pair(_modern)
    _same(one, two, MODERN_CASES[index])
    _same(one, two, MODERN_CASES[index])
    assert one.version == two.version and one.state is two.state


def _initialize(version: Any = LEGACY, **extra: Any) -> bytes:
    params = {
        "protocolVersion": version,
        "capabilities": {"sampling": {}},
        "clientInfo": {"name": "c", "version": "1"},
        **extra,
    }
    return json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}).encode()


def _newest_legacy() -> str:
    return server().legacy_versions[0]


INITIALIZE_CASES: list[bytes] = [
    _initialize(_newest_legacy()),
    _initialize("2024-11-05"),
    _initialize("1900-01-01"),
    _initialize(20250618),
    _initialize(None),
    _initialize(_newest_legacy(), _meta={"io.modelcontextprotocol/protocolVersion": MODERN_VERSION}),
    _initialize(_newest_legacy(), _meta={"io.modelcontextprotocol/protocolVersion": "2025-06-18"}),
    _initialize(_newest_legacy(), _meta=None),
    _initialize(_newest_legacy(), _meta=[1]),
    _initialize(_newest_legacy(), clientInfo=3),
    _initialize(_newest_legacy(), unknown={"x": 1}),
    b'{"jsonrpc":"2.0","id":0,"method":"initialize"}',
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":[]}',
    b'{"jsonrpc":"2.0","id":null,"method":"initialize","params":{}}',
    _initialize(_newest_legacy()).replace(b'"jsonrpc": "2.0", ', b""),
    _initialize(_newest_legacy()).replace(b'"id": 0', b'"id": 0, "result": {}'),
    _initialize(_newest_legacy()).replace(b'"id": 0', b'"id": 0, "method": "tools/list"'),
    _initialize(_newest_legacy()).replace(b'"id": 0', b'"id": 0.0'),
    b"[" + _initialize(_newest_legacy()) + b"]",
]


@pytest.mark.parametrize("index", range(len(INITIALIZE_CASES)))
def test_initialize_fast_and_two_pass_paths_agree(index: int) -> None:
    one, two = server(), server()
    patch_receiver(two, _receive_initialize=lambda data, events: False)
    _same(one, two, INITIALIZE_CASES[index])
    assert (one.version, one.state, one.peer_info, one.peer_capabilities) == (
        two.version,
        two.state,
        two.peer_info,
        two.peer_capabilities,
    )
    _same(one, two, INITIALIZE_CASES[index])


def test_initialize_takes_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_trio import _jsonrpc as rpc

    srv = server()
    calls: list[Any] = []
    real = rpc.decode_envelope
    monkeypatch.setattr(rpc, "decode_envelope", lambda data: calls.append(data) or real(data))
    srv.receive(_initialize(srv.legacy_versions[0]))
    assert calls == [] and srv.state is State.INITIALIZING
