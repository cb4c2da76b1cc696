"""The core's gate for incoming requests: one lookup in a table built per
revision (direction, kind and advertised capability decided once), with the
same answers as checking every message."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_trio._core import Outgoing, RequestReceived, SessionCore
from mcp_trio.types import _versions
from tests._support.core import LEGACY, MODERN, handshake, server


def request(id: int, method: str, params: dict[str, Any] | None = None, version: str | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    if version is not None and _versions.is_stateless(version):
        meta = {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        message["params"] = {**(params or {}), "_meta": meta}
    return json.dumps(message).encode()


def ready(version: str, **kw: Any) -> SessionCore:
    srv = server(**kw)
    if not _versions.is_stateless(version):
        cli = SessionCore("client", info={"name": "c", "version": "1"}, versions=[version])
        handshake(srv, cli, version)
    return srv


def answer(events: list[Any]) -> dict[str, Any]:
    found = [json.loads(e.data) for e in events if isinstance(e, Outgoing)]
    assert len(found) == 1, events
    return found[0]


@pytest.mark.parametrize("version", LEGACY + MODERN)
def test_unadvertised_capability_is_named(version: str) -> None:
    srv = ready(version, capabilities={"tools": {}})
    reply = answer(srv.receive(request(1, "prompts/list", version=version)))
    assert reply["error"]["code"] == -32601
    assert (
        reply["error"]["message"]
        == "Method not found: prompts/list (the 'prompts' capability is not advertised)"
    )
    # asked again: the same answer (the table is reused, not rebuilt wrongly)
    reply = answer(srv.receive(request(2, "prompts/list", version=version)))
    assert "'prompts' capability" in reply["error"]["message"]
    events = srv.receive(request(3, "tools/list", version=version))
    assert [e.method for e in events if isinstance(e, RequestReceived)] == ["tools/list"]


@pytest.mark.parametrize("version", LEGACY + MODERN)
def test_wrong_direction_and_unknown_methods(version: str) -> None:
    srv = ready(version)
    # a request only servers send, and a method no revision has
    for id, method in (
        (1, "sampling/createMessage"),
        (2, "no/such/method"),
        (3, "notifications/initialized"),
    ):
        reply = answer(srv.receive(request(id, method, {}, version=version)))
        assert reply == {
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32601, "message": f"Method not found: {method}"},
        }


@pytest.mark.parametrize("version", LEGACY)
def test_extra_methods_beside_the_table(version: str) -> None:
    # A non-spec method, and one named like a request of the other direction,
    # are this side's own: params as plain JSON.  A spec request whose
    # capability is missing stays refused even when listed.
    srv = ready(
        version,
        capabilities={"tools": {}},
        extra_methods=["x/custom", "sampling/createMessage", "prompts/list"],
    )
    for id, method in ((1, "x/custom"), (2, "sampling/createMessage")):
        events = srv.receive(request(id, method, {"a": [1]}))
        got = [e for e in events if isinstance(e, RequestReceived)]
        assert len(got) == 1 and got[0].params == {"a": [1]} and got[0].spec is None
    reply = answer(srv.receive(request(3, "prompts/list")))
    assert "'prompts' capability is not advertised" in reply["error"]["message"]


def test_each_revision_has_its_own_table() -> None:
    # One server, two clients of different eras: server/discover exists only
    # in the stateless revision, and a legacy session does not see it.
    legacy = ready(LEGACY[0])
    reply = answer(legacy.receive(request(1, "server/discover", {})))
    assert reply["error"]["code"] == -32601
    modern = ready(MODERN[0])
    reply = answer(modern.receive(request(1, "server/discover", version=MODERN[0])))
    assert "supportedVersions" in reply["result"]


def test_is_stateless_answers_unknown_versions_too() -> None:
    assert _versions.is_stateless("2026-07-28") and not _versions.is_stateless("2025-11-25")
    assert _versions.is_stateless("2030-01-01") and not _versions.is_stateless("2020-01-01")
    assert _versions.is_stateless("draft") and not _versions.is_stateless("nonsense")


@pytest.mark.parametrize("version", LEGACY + MODERN)
def test_cores_made_alike_share_one_table_and_others_get_their_own(version: str) -> None:
    # A stateless HTTP request gets a core of its own: the gate is built once
    # for all cores with the same role, revision, extensions and capabilities.
    a = ready(version, capabilities={"tools": {}, "prompts": {}})
    b = ready(version, capabilities={"prompts": {}, "tools": {}})  # same, in another order
    assert a.gate.accepted(version) is b.gate.accepted(version)
    c = ready(version, capabilities={"tools": {}})
    assert c.gate.accepted(version) is not a.gate.accepted(version)
    assert "prompts/list" in a.gate.accepted(version)
    assert "prompts/list" not in c.gate.accepted(version)
    reply = answer(c.receive(request(1, "prompts/list", version=version)))  # what c refuses
    assert "'prompts' capability is not advertised" in reply["error"]["message"]
    events = a.receive(request(1, "prompts/list", version=version))  # and a takes
    assert [e.method for e in events if isinstance(e, RequestReceived)] == ["prompts/list"]
    # a client core with the same capabilities answers the other direction's requests
    cli = SessionCore(
        "client",
        info={"name": "c", "version": "1"},
        capabilities={"tools": {}, "prompts": {}},
        versions=[version],
    )
    assert "tools/list" not in cli.gate.accepted(version)
