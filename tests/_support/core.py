"""The sans-IO core, driven by hand: a client and a server ``SessionCore``, the handshake between
them, and what their events put on the wire."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mcp_trio._core import (
    Outgoing,
    PeerInitialized,
    SessionCore,
    State,
)
from mcp_trio.types import _versions

LEGACY = [v for v in _versions.SUPPORTED_VERSIONS if not _versions.is_stateless(v)]


MODERN = [v for v in _versions.SUPPORTED_VERSIONS if _versions.is_stateless(v)]


SERVER_CAPS = {
    "tools": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
    "prompts": {},
    "logging": {},
}


CLIENT_CAPS = {"sampling": {}, "roots": {"listChanged": True}}


def server(**kw: Any) -> SessionCore:
    kw.setdefault("capabilities", SERVER_CAPS)
    return SessionCore("server", info={"name": "srv", "version": "1"}, **kw)


def client(**kw: Any) -> SessionCore:
    kw.setdefault("capabilities", CLIENT_CAPS)
    return SessionCore("client", info={"name": "cli", "version": "1"}, **kw)


def outgoing(events: list[Any]) -> list[Any]:
    """The JSON of every Outgoing event."""
    return [json.loads(e.data) for e in events if isinstance(e, Outgoing)]


def only(events: list[Any], kind: type) -> Any:
    found = [e for e in events if isinstance(e, kind)]
    assert len(found) == 1, events
    return found[0]


def handshake(srv: SessionCore, cli: SessionCore, version: str | None = None) -> None:
    version = version or cli.legacy_versions[0]
    _id, data = cli.start_request(
        "initialize",
        {"protocolVersion": version, "capabilities": cli.capabilities, "clientInfo": cli.info},
    )
    events = srv.receive(data)
    reply = only(events, Outgoing)
    cli_events = cli.receive(reply.data)
    only(cli_events, PeerInitialized)
    srv.receive(cli.notify("notifications/initialized"))
    assert srv.state is State.READY and cli.state is State.READY


def ready_pair(version: str | None = None, **server_kw: Any) -> tuple[SessionCore, SessionCore]:
    srv = server(**server_kw)
    cli = client(versions=[version] if version else None)
    handshake(srv, cli, version)
    return srv, cli


def patch_receiver(core: SessionCore, **paths: Callable[[Any, list[Any]], bool]) -> None:
    """Replace one-pass paths of ``core``'s receiver (``_receive_known_request``,
    ``_receive_initialize``, ``_receive_expected_result``) by ``(data, events) ->
    taken`` functions: the receiver gets a subclass of its own (its class has
    ``__slots__``: an instance cannot be patched), other cores keep theirs."""
    receiver = core.receiver

    def bound(path: Callable[[Any, list[Any]], bool]) -> Callable[[Any, Any, list[Any]], bool]:
        return lambda self, data, events: path(data, events)

    members: dict[str, Any] = {"__slots__": ()}
    members.update({name: bound(path) for name, path in paths.items()})
    receiver.__class__ = type("PatchedReceiver", (type(receiver),), members)
