"""mcp_trio.fuzzing.wire: the fuzzer's oracles on live traffic (what --validate runs), message by
message, with the rules they break graded and cited as the fuzzer's findings are."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mcp_trio.fuzzing.wire import Policy, Validator, WireCheck
from tests._support.messages import note, request, result

OLD = "2025-06-18"
LATEST = "2026-07-28"
TOOLS = {"tools": [{"name": "add", "inputSchema": {"type": "object"}}]}


def rules(findings: list[Any]) -> list[str]:
    return [f.rule for f in findings]


def test_a_correct_exchange_breaks_nothing() -> None:
    wire = WireCheck(OLD, server_capabilities={"tools": {}}, client_capabilities={})
    assert wire.check("client", request(1, "tools/list")) == []
    assert wire.check("server", result(1, TOOLS)) == []
    assert wire.check("client", request("a", "tools/call", {"name": "add", "arguments": {}})) == []
    assert (
        wire.check("server", {"jsonrpc": "2.0", "id": "a", "error": {"code": -32602, "message": "no"}}) == []
    )
    assert wire.check("client", request(2, "x/custom", {"any": 1})) == []  # (custom methods are not judged)


def test_a_result_that_is_not_the_methods_result_type_is_a_violation_citing_the_schema_rule() -> None:
    wire = WireCheck(OLD, server_capabilities={"tools": {}})
    wire.check("client", request(1, "tools/list"))
    (found,) = wire.check("server", result(1, {"tools": [{"name": 3}]}))
    assert (found.rule, found.severity) == ("result-schema", "violation")
    assert "not a valid tools/list result" in found.message
    assert found.to_json(OLD)["cites"]["document"] == f"docs/specification/{OLD}/basic/index.mdx"


def test_answers_must_answer_one_unanswered_request_of_the_other_side() -> None:
    wire = WireCheck(OLD, server_capabilities={"tools": {}})
    wire.check("client", request(1, "tools/list"))
    assert wire.check("server", result(1, TOOLS)) == []
    assert rules(wire.check("server", result(1, TOOLS))) == ["one-reply"]
    assert rules(wire.check("server", result(99, TOOLS))) == ["unasked-response"]
    assert rules(wire.check("client", result(1, {}))) == ["unasked-response"]  # (the server asked nothing)
    wire.check("client", request(2, "tools/list"))
    both = {"jsonrpc": "2.0", "id": 2, "result": {}, "error": {"code": 1, "message": "x"}}
    (found,) = wire.check("server", both)
    assert found.rule == "response-envelope" and "exactly one of result and error" in found.message


def test_request_ids_are_strings_or_integers_and_not_reused_while_unanswered() -> None:
    wire = WireCheck(OLD, server_capabilities={"tools": {}})
    assert rules(wire.check("client", request(None, "tools/list"))) == ["request-id"]
    assert rules(wire.check("client", request(True, "tools/list"))) == ["request-id"]
    assert wire.check("client", request(7, "tools/list")) == []
    assert rules(wire.check("client", request(7, "tools/list"))) == ["request-id"]
    wire.check("server", result(7, TOOLS))
    assert wire.check("client", request(7, "tools/list")) == []  # (answered: the id is free again)
    assert wire.check("server", request(7, "ping")) == []  # (each side has its own ids)


def test_messages_must_be_their_revisions_types_sent_by_the_side_that_sends_them() -> None:
    wire = WireCheck(OLD, server_capabilities={"tools": {"listChanged": True}}, client_capabilities={})
    assert rules(wire.check("server", {"id": 1, "result": {}})) == ["valid-message"]  # (no jsonrpc)
    assert rules(wire.check("client", note("notifications/initialized") | {"id": 3})) == ["valid-message"]
    (found,) = wire.check("server", request(1, "tools/call", {"name": "x"}))
    assert found.rule == "valid-message" and "is sent by the client" in found.message
    (found,) = wire.check("client", request(2, "tools/call", {"name": 5}))
    assert found.rule == "valid-message" and "not a valid 2025-06-18 tools/call" in found.message
    assert wire.check("server", note("notifications/tools/list_changed")) == []


def test_a_feature_the_other_side_did_not_advertise_is_a_note() -> None:
    wire = WireCheck(OLD, server_capabilities={"tools": {}}, client_capabilities={"roots": {}})
    (found,) = wire.check("server", note("notifications/tools/list_changed"))
    assert (found.rule, found.severity) == ("capabilities", "note")
    assert "the server did not advertise tools.listChanged" in found.message
    (found,) = wire.check("server", request(1, "sampling/createMessage", {"messages": [], "maxTokens": 5}))
    assert found.rule == "capabilities" and "the client did not advertise sampling" in found.message
    assert wire.check("server", request(2, "roots/list")) == []
    assert rules(wire.check("client", request(3, "prompts/list"))) == ["capabilities"]


def test_in_2026_07_28_asks_travel_inside_results_not_as_requests() -> None:
    wire = WireCheck(LATEST, client_capabilities={"elicitation": {}})
    params = {"message": "name?", "requestedSchema": {"type": "object", "properties": {}}}
    (found,) = wire.check("server", request(1, "elicitation/create", params))
    assert found.rule == "valid-message" and "inside an InputRequiredResult" in found.message


def test_the_members_of_a_2025_03_26_batch_are_checked_each() -> None:
    wire = WireCheck("2025-03-26", server_capabilities={"tools": {}})
    batch = [request(1, "tools/list"), request(2, "tools/list"), note("notifications/initialized")]
    assert wire.check("client", batch) == []
    assert rules(wire.check("server", [result(1, TOOLS), result(2, {"tools": 1})])) == ["result-schema"]
    assert rules(WireCheck(OLD).check("client", batch)) == ["valid-message"]  # (no batches in 2025-06-18)


def test_what_it_remembers_is_bounded() -> None:
    wire = WireCheck(OLD, server_capabilities={"tools": {}}, max_pending=3, max_answered=2)
    for n in range(10):
        wire.check("client", request(n, "tools/list"))
    assert rules(wire.check("server", result(0, TOOLS))) == ["unasked-response"]  # (forgotten)
    assert wire.check("server", result(9, TOOLS)) == []


def test_a_policy_names_an_action_per_rule_or_grade() -> None:
    policy = Policy.parse("count, result-schema=block, note=log")
    wire = WireCheck(OLD, server_capabilities={"tools": {}})
    wire.check("client", request(1, "tools/list"))
    (schema,) = wire.check("server", result(1, {"tools": 1}))
    (unasked,) = wire.check("server", result(5, TOOLS))
    (capability,) = wire.check("server", note("notifications/tools/list_changed"))
    assert [policy.action(f) for f in (schema, unasked, capability)] == ["block", "count", "log"]
    assert Policy.parse("").default == "log"
    with pytest.raises(ValueError, match="no rule 'result-shape' to validate"):
        Policy.parse("result-shape=block")
    with pytest.raises(ValueError, match="validation action 'drop' for 'note': use one of log, count, block"):
        Policy.parse("note=drop")
    with pytest.raises(ValueError, match="validation action 'warn'"):
        Policy.parse("warn")


def test_a_validator_logs_counts_and_blocks_as_its_policy_says(caplog: pytest.LogCaptureFixture) -> None:
    validator = Validator(
        WireCheck(OLD, server_capabilities={"tools": {}}), Policy("log", {"result-schema": "block"})
    )
    assert not validator.judge("client", request(1, "tools/list")).blocked
    with caplog.at_level(logging.INFO, logger="mcp_trio.validate"):
        verdict = validator.judge("server", result(1, {"tools": 1}))
        assert verdict.blocked and "violation of result-schema" in verdict.reason(OLD)
        assert not validator.judge("server", result(8, TOOLS)).blocked
    assert [r.levelno for r in caplog.records] == [logging.WARNING, logging.WARNING]
    assert caplog.records[0].getMessage().startswith("blocked, the server: violation of result-schema")
    assert "the server: violation of unasked-response" in caplog.records[1].getMessage()
    assert validator.report() == {
        "revision": OLD,
        "findings": [
            {"rule": "result-schema", "grade": "violation", "sender": "server", "count": 1},
            {"rule": "unasked-response", "grade": "violation", "sender": "server", "count": 1},
        ],
    }


def test_the_revision_and_capabilities_are_learned_from_the_traffic() -> None:
    wire = WireCheck()
    assert wire.check("client", request(1, "server/discover")) == []
    discovered = {
        "supportedVersions": [LATEST],
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "s", "version": "1"},
    }
    wire.check("server", result(1, discovered))
    assert wire.capabilities["server"] == {"tools": {}} and wire.revision is None
    meta = {
        "io.modelcontextprotocol/protocolVersion": LATEST,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    wire.check("client", request(2, "tools/list", {"_meta": meta}))
    assert wire.revision == LATEST and wire.capabilities["client"] == {}
    assert rules(wire.check("server", result(2, {"tools": "none"}))) == ["result-schema"]
    old = WireCheck()
    old.check(
        "client",
        request(
            0,
            "initialize",
            {
                "protocolVersion": OLD,
                "capabilities": {"roots": {}},
                "clientInfo": {"name": "c", "version": "1"},
            },
        ),
    )
    old.check(
        "server",
        result(0, {"protocolVersion": OLD, "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}),
    )
    assert (old.revision, old.capabilities["client"]) == (OLD, {"roots": {}})
    assert rules(old.check("client", request(1, "tools/list"))) == ["capabilities"]
