"""METHODS: one entry per request/notification the schema declares, and the right facts."""

from __future__ import annotations

import pytest

from mcp_trio.types import MethodSpec
from tests._support.types import LATEST, REVISIONS, module, raw_defs, raw_methods


@pytest.mark.parametrize("rev", REVISIONS)
def test_registry_covers_exactly_the_schema(rev: str) -> None:
    assert set(module(rev).METHODS) == set(raw_methods(rev))


@pytest.mark.parametrize("rev", REVISIONS)
def test_registry_facts_match_the_schema(rev: str) -> None:
    mod = module(rev)
    _, defs = raw_defs(rev)
    for method, raw in raw_methods(rev).items():
        spec = mod.METHODS[method]
        assert isinstance(spec, MethodSpec)
        assert spec.method == method
        assert spec.kind == raw["kind"]
        assert spec.message is getattr(mod, raw["message"])
        senders = raw["senders"] or {"server"}
        assert spec.direction == ("both" if len(senders) == 2 else next(iter(senders)))
        assert spec.input_request == (not raw["senders"])
        params = raw["def"]["properties"].get("params")
        assert spec.params_required == ("params" in raw["def"].get("required", []))
        if params is None:
            assert spec.params is None
        elif "$ref" in params:
            assert spec.params is getattr(mod, params["$ref"].rsplit("/", 1)[1])
        else:
            assert spec.params is getattr(mod, raw["message"] + "Params")
        if spec.kind == "notification":
            assert spec.results == ()
        else:
            assert spec.results
            expected = raw["message"].removesuffix("Request") + "Result"
            first = getattr(mod, expected) if expected in defs else mod.EmptyResult
            assert spec.results[0] is first
            assert spec.result is first


def test_sizes() -> None:
    def count(rev: str) -> tuple[int, int]:
        specs = module(rev).METHODS.values()
        return (
            sum(s.kind == "request" for s in specs),
            sum(s.kind == "notification" for s in specs),
        )

    assert count("2024-11-05") == (15, 9)
    assert count("2025-03-26") == (15, 9)
    assert count("2025-06-18") == (16, 9)
    assert count("2025-11-25") == (20, 11)
    assert count("2026-07-28") == (13, 8)


def test_directions() -> None:
    m = module("2025-11-25").METHODS
    assert m["tools/call"].direction == "client"
    assert m["sampling/createMessage"].direction == "server"
    for both in (
        "ping",
        "tasks/get",
        "tasks/list",
        "tasks/cancel",
        "tasks/result",
        "notifications/cancelled",
        "notifications/progress",
        "notifications/tasks/status",
    ):
        assert m[both].direction == "both", both
    m26 = module(LATEST).METHODS
    assert m26["notifications/cancelled"].direction == "both"
    assert m26["notifications/progress"].direction == "server"


def test_input_requests_2026() -> None:
    m = module(LATEST).METHODS
    assert {k for k, s in m.items() if s.input_request} == {
        "sampling/createMessage",
        "roots/list",
        "elicitation/create",
    }
    for spec in m.values():
        if spec.input_request:
            assert spec.direction == "server"
            assert "jsonrpc" not in spec.message.__struct_fields__  # not a JSON-RPC message


def test_alternative_results() -> None:
    m25 = module("2025-11-25")
    with_task = {k for k, s in m25.METHODS.items() if m25.CreateTaskResult in s.results}
    assert with_task == {"tools/call", "sampling/createMessage", "elicitation/create"}
    for method in with_task:
        assert m25.METHODS[method].results[1] is m25.CreateTaskResult
    m26 = module(LATEST)
    with_input = {k for k, s in m26.METHODS.items() if m26.InputRequiredResult in s.results}
    assert with_input == {"tools/call", "prompts/get", "resources/read"}
    assert m26.METHODS["tools/call"].results == (m26.CallToolResult, m26.InputRequiredResult)


EXPECTED_CAPABILITIES = {
    "tools/list": ("tools",),
    "tools/call": ("tools",),
    "resources/list": ("resources",),
    "resources/read": ("resources",),
    "resources/templates/list": ("resources",),
    "resources/subscribe": ("resources", "subscribe"),
    "resources/unsubscribe": ("resources", "subscribe"),
    "prompts/list": ("prompts",),
    "prompts/get": ("prompts",),
    "logging/setLevel": ("logging",),
    "completion/complete": ("completions",),
    "sampling/createMessage": ("sampling",),
    "roots/list": ("roots",),
    "elicitation/create": ("elicitation",),
    "tasks/list": ("tasks", "list"),
    "tasks/cancel": ("tasks", "cancel"),
    "notifications/message": ("logging",),
    "notifications/resources/updated": ("resources", "subscribe"),
    "notifications/resources/list_changed": ("resources", "listChanged"),
    "notifications/tools/list_changed": ("tools", "listChanged"),
    "notifications/prompts/list_changed": ("prompts", "listChanged"),
    "notifications/roots/list_changed": ("roots", "listChanged"),
}


@pytest.mark.parametrize("rev", REVISIONS)
def test_capabilities(rev: str) -> None:
    for method, spec in module(rev).METHODS.items():
        expected = EXPECTED_CAPABILITIES.get(method)
        if rev == "2024-11-05" and method == "completion/complete":
            expected = None  # ServerCapabilities has no `completions` before 2025-03-26
        assert spec.capability == expected, method


@pytest.mark.parametrize("rev", REVISIONS)
def test_capability_paths_exist_in_the_schema(rev: str) -> None:
    _, defs = raw_defs(rev)

    def declared(root: str, path: tuple[str, ...]) -> bool:
        node = defs[root]
        for key in path:
            props = node.get("properties", {})
            if key not in props:
                return False
            node = props[key]
        return True

    for spec in module(rev).METHODS.values():
        if spec.capability is None:
            continue
        receiver_caps = {"client": "ServerCapabilities", "server": "ClientCapabilities"}
        sender_caps = {"client": "ClientCapabilities", "server": "ServerCapabilities"}
        table = receiver_caps if spec.kind == "request" else sender_caps
        sides = ["client", "server"] if spec.direction == "both" else [spec.direction]
        assert any(declared(table[s], spec.capability) for s in sides), spec.method
