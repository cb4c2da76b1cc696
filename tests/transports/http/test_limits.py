"""The connection bounds every front door takes are declared once (ConnectionLimits), and each
door, Server.serve_http and `mcp-trio serve` take them with those defaults."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from mcp_trio._cli import _serve
from mcp_trio.server import Server
from mcp_trio.transports.http.doors import FRONT_DOORS, ConnectionLimits
from mcp_trio.transports.http.doors.asgi import ASGIApp, serve_hypercorn
from mcp_trio.transports.http.doors.h11 import serve_h11
from mcp_trio.transports.websocket import serve_wsproto

ALL = ConnectionLimits.names()


@pytest.mark.parametrize(
    ("serve", "takes"),
    [
        (serve_h11, ALL),
        (Server.serve_http, ALL),
        (serve_hypercorn, tuple(n for n in ALL if n != "request_timeout")),  # (the ASGI app's)
        (ASGIApp.__init__, ("request_timeout",)),
        (serve_wsproto, ("max_connections", "max_connections_per_client")),
    ],
)
def test_each_door_takes_the_declared_defaults(serve: Callable[..., Any], takes: tuple[str, ...]) -> None:
    parameters = inspect.signature(serve).parameters
    defaults = ConnectionLimits()
    assert {n for n in ALL if n in parameters} == set(takes)
    for name in takes:
        assert parameters[name].default == getattr(defaults, name), name


def test_the_command_line_takes_every_limit_with_its_default_in_the_help() -> None:
    assert _serve._DOOR_OPTIONS == ALL
    import argparse

    parser = argparse.ArgumentParser()
    _serve.add_parser(parser.add_subparsers())
    serve = parser._subparsers._group_actions[0].choices["serve"]  # type: ignore[union-attr]
    helps = {a.dest: a.help or "" for a in serve._actions}
    defaults = ConnectionLimits()
    for name in ALL:
        assert name in helps, name
        if name != "max_connections_per_client":
            assert f"(default: {getattr(defaults, name):g}" in helps[name], helps[name]
    front = next(a for a in serve._actions if a.dest == "front_door")
    assert tuple(front.choices or ()) == FRONT_DOORS
