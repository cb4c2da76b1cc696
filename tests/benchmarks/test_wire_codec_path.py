"""benchmarks/wire_codec.py measures the path the session core takes.

For every message of the codec benchmark, the core is driven with the same
bytes and must take the one-pass path the benchmark times (the two-pass
envelope decoder is never called) and produce the same typed payload.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.bench_codec import REVISIONS, message_set
from benchmarks.wire_codec import ours, wire_message
from mcp_trio import _jsonrpc as rpc
from mcp_trio._core import RequestReceived, ResponseReceived, SessionCore, State
from mcp_trio.types import _versions
from tests._support.core import client, handshake, server

pytestmark = pytest.mark.perf

# server/discover opens a stateless session (the revision is not settled yet): it
# takes the two-pass path, and the benchmark times it so.
CASES = [
    (revision, case)
    for revision in REVISIONS
    for case in message_set(revision)
    if wire_message(case)[1] != "server/discover"
]


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    real = rpc.decode_envelope
    monkeypatch.setattr(rpc, "decode_envelope", lambda data: calls.append(data) or real(data))
    return calls


def _settled_server(revision: str) -> SessionCore:
    srv = server(capabilities={"tools": {}})
    if _versions.is_stateless(revision):
        meta = {
            "io.modelcontextprotocol/protocolVersion": revision,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        msg = {"jsonrpc": "2.0", "id": "open", "method": "tools/list", "params": {"_meta": meta}}
        srv.receive(json.dumps(msg).encode())
        assert srv.state is State.MODERN
    else:
        handshake(srv, client(versions=[revision]), revision)
    return srv


@pytest.mark.parametrize(("revision", "case"), CASES, ids=[f"{r}-{c.name}" for r, c in CASES])
def test_the_core_takes_the_benchmarked_path(
    revision: str, case: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, method = wire_message(case)
    decode, _ = ours(case)
    expected_id, expected = decode(data)
    if method == "initialize":
        srv = server(versions=[revision])
        calls = _counting(monkeypatch)
        srv.receive(data)
        assert calls == [] and srv.state is State.INITIALIZING and srv.version == revision
        return
    if method is not None:
        srv = _settled_server(revision)
        calls = _counting(monkeypatch)
        (event,) = srv.receive(data)
        assert calls == []
        assert isinstance(event, RequestReceived)
        assert (event.id, event.params) == (expected_id, expected)
        return
    cli = client(versions=None if _versions.is_stateless(revision) else [revision])
    if _versions.is_stateless(revision):
        cli.use_modern(revision, server_capabilities={"tools": {}})
    else:
        handshake(server(), cli, revision)
    request = "tools/call" if case.type_name == "CallToolResult" else "tools/list"
    id, _ = cli.start_request(request, {"name": "x"} if request == "tools/call" else None)
    calls = _counting(monkeypatch)
    (event,) = cli.receive(data.replace(b'"id":7', b'"id":%d' % id, 1))
    assert calls == []
    assert isinstance(event, ResponseReceived) and event.result == expected
