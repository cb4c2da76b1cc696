"""What the everything example shows an official SDK client, checked on the JSON line that
``tests/programs/sdk_everything_client.py`` prints: over stdio (tests/interop/test_sdk_client_everything.py)
and through three workers behind a proxy (test_sdk_clients_shared.py)."""

from __future__ import annotations

import json
from typing import Any

from tests._support.everything import PROMPTS, TOOLS, check_png, check_wav

#: The tools that answer the SDK (which declares no tasks) with a JSON-RPC error.
ERRORS = {
    "2025-11-25": {"failing_job": -32601, "test_tool_with_task": -32601},  # need a task
    "2026-07-28": {"failing_job": -32021, "test_tool_with_task": -32021},  # need the extension
}


def text_of(result: dict[str, Any]) -> str:
    (block,) = result["content"]
    assert block["type"] == "text"
    return str(block["text"])


def check_connection(out: dict[str, Any]) -> None:
    assert out["server_info"]["name"] == "mcp-trio-everything"
    caps = out["server_capabilities"]
    assert caps["tools"] == {"listChanged": True}
    assert caps["resources"] == {"listChanged": True, "subscribe": True}
    assert "Traceback" not in out["server_stderr"]


def check_tools_listed(out: dict[str, Any]) -> None:
    tools = out["tools"]
    assert set(tools) == TOOLS
    for name, tool in tools.items():
        assert tool["description"], name
        assert tool["inputSchema"]["type"] == "object", name
    schema = tools["json_schema_2020_12_tool"]["inputSchema"]
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$defs"]["address"]["$anchor"] == "addressDef"
    assert schema["additionalProperties"] is False
    assert {"allOf", "if", "then", "else"} <= set(schema)


def check_content_tools(out: dict[str, Any]) -> None:
    calls = out["calls"]
    assert set(calls) == TOOLS
    failed = {name for name, result in calls.items() if result.get("isError")}
    assert failed == {"test_error_handling"}
    errors = {name: result["error"]["code"] for name, result in calls.items() if "error" in result}
    assert errors == {**ERRORS[out["protocol_version"]], "protocol_error_job": -32603}
    assert text_of(calls["test_simple_text"]) == "This is a simple text response for testing."
    assert text_of(calls["test_error_handling"]) == "This tool intentionally returns an error for testing"
    (image,) = calls["test_image_content"]["content"]
    assert (image["type"], image["mimeType"]) == ("image", "image/png")
    check_png(image["data"])
    (audio,) = calls["test_audio_content"]["content"]
    assert (audio["type"], audio["mimeType"]) == ("audio", "audio/wav")
    check_wav(audio["data"])
    (embedded,) = calls["test_embedded_resource"]["content"]
    assert embedded == {
        "type": "resource",
        "resource": {
            "uri": "test://embedded-resource",
            "mimeType": "text/plain",
            "text": "This is an embedded resource content.",
        },
    }
    mixed = calls["test_multiple_content_types"]["content"]
    assert [c["type"] for c in mixed] == ["text", "image", "resource"]
    assert json.loads(mixed[2]["resource"]["text"]) == {"test": "data", "value": 123}
    assert text_of(calls["json_schema_2020_12_tool"]) == (
        'JSON Schema 2020-12 tool called with: {"name":"Ann","email":"ann@example.com"}'
    )
    assert text_of(calls["test_reconnection"]) == "Reconnection test completed"


def check_logging_and_progress(out: dict[str, Any]) -> None:
    calls = out["calls"]
    assert text_of(calls["test_tool_with_logging"]) == "Tool with logging executed successfully"
    assert out["logs"][:3] == [
        ["info", "Tool execution started"],
        ["info", "Tool processing data"],
        ["info", "Tool execution completed"],
    ]
    # The SDK asked for progress, so the tool answers with the SDK's token.
    assert text_of(calls["test_tool_with_progress"]) != "no progress token was given"
    assert out["progress"] == [
        [0.0, 100.0, "Completed step 0 of 100"],
        [50.0, 100.0, "Completed step 50 of 100"],
        [100.0, 100.0, "Completed step 100 of 100"],
    ]
    if "set_level" in out:
        assert out["set_level"] == {}


def check_sampling(out: dict[str, Any]) -> None:
    assert text_of(out["calls"]["test_sampling"]) == ("LLM response: This is a test response from the client")
    request = out["sampling_requests"][0]  # test_sampling is the first tool that samples
    assert request["maxTokens"] == 100
    assert request["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Test prompt for sampling"}}
    ]


def check_elicitation(out: dict[str, Any]) -> None:
    calls = out["calls"]
    assert text_of(calls["test_elicitation"]) == (
        'User response: action=accept, content={"username":"testuser","email":"test@example.com"}'
    )
    prefix = "Elicitation completed: action=accept, content="
    defaults = text_of(calls["test_elicitation_sep1034_defaults"])
    assert defaults.startswith(prefix)
    assert json.loads(defaults[len(prefix) :])["name"] == "Jane Smith"
    enums = text_of(calls["test_elicitation_sep1330_enums"])
    assert enums.startswith(prefix)
    assert json.loads(enums[len(prefix) :])["titledMulti"] == ["value1", "value3"]

    contact, with_defaults, with_enums = out["elicitation_requests"][:3]
    assert contact["message"] == "Please provide your information"
    assert contact["requestedSchema"]["required"] == ["username", "email"]
    properties = with_defaults["requestedSchema"]["properties"]
    assert {k: v["default"] for k, v in properties.items()} == {
        "name": "John Doe",
        "age": 30,
        "score": 95.5,
        "status": "active",
        "verified": True,
    }
    forms = with_enums["requestedSchema"]["properties"]
    assert "oneOf" in forms["titledSingle"] and "enumNames" in forms["legacyEnum"]
    assert forms["untitledMulti"]["items"]["enum"] == ["option1", "option2", "option3"]
    assert len(forms["titledMulti"]["items"]["anyOf"]) == 3


def check_resources(out: dict[str, Any]) -> None:
    listed = {r["uri"]: r for r in out["resources"]}
    assert set(listed) == {"test://static-text", "test://static-binary", "test://watched-resource"}
    assert all(r["description"] and r["name"] for r in listed.values())
    (template,) = out["templates"]
    assert template["uriTemplate"] == "test://template/{id}/data"
    reads = {uri: result["contents"] for uri, result in out["reads"].items()}
    assert reads["test://static-text"] == [
        {
            "uri": "test://static-text",
            "mimeType": "text/plain",
            "text": "This is the content of the static text resource.",
        }
    ]
    (blob,) = reads["test://static-binary"]
    assert blob["mimeType"] == "image/png"
    check_png(blob["blob"])
    (data,) = reads["test://template/123/data"]
    assert json.loads(data["text"]) == {
        "id": "123",
        "templateTest": True,
        "data": "Data for ID: 123",
    }
    assert reads["test://watched-resource"][0]["text"] == "Watched resource content"
    if out["protocol_version"] < "2026-07-28":  # no resources/subscribe in the stateless era
        assert out["subscribe"] == {} and out["unsubscribe"] == {}
    else:
        assert "subscribe" not in out


def check_prompts_and_completions(out: dict[str, Any]) -> None:
    prompts = out["prompts"]
    assert set(prompts) == PROMPTS
    assert all(p["description"] for p in prompts.values())
    results = {name: r["messages"] for name, r in out["prompt_results"].items()}
    assert results["test_simple_prompt"] == [
        {
            "role": "user",
            "content": {"type": "text", "text": "This is a simple prompt for testing."},
        }
    ]
    assert results["test_prompt_with_arguments"][0]["content"]["text"] == (
        "Prompt with arguments: arg1='hello', arg2='world'"
    )
    resource, note = results["test_prompt_with_embedded_resource"]
    assert resource["content"]["resource"]["uri"] == "test://example-resource"
    assert note["content"]["text"] == "Please process the embedded resource above."
    image, note = results["test_prompt_with_image"]
    check_png(image["content"]["data"])
    assert note["content"]["text"] == "Please analyze the image above."
    assert out["complete_arg1"]["completion"]["values"] == ["alpha", "alpine"]
    assert out["complete_id"]["completion"]["values"] == ["42"]


def check_input_and_task_fixtures(out: dict[str, Any]) -> None:
    """The SDK answers the new fixtures' asks: requests in 2025-11-25, multi-round-trip
    input requests in 2026-07-28 (several at once, and over several rounds)."""
    texts = {
        name: text_of(result)
        for name, result in out["calls"].items()
        if [c["type"] for c in result.get("content", ())] == ["text"]
    }
    reply = "This is a test response from the client"
    assert texts["test_input_required_result_elicitation"] == "Hello, SDK user!"
    assert texts["test_input_required_result_sampling"] == f"LLM response: {reply}"
    assert texts["test_input_required_result_list_roots"] == "Client roots: file:///sdk/root"
    assert texts["test_input_required_result_multiple_inputs"] == (
        f"name=SDK user; greeting={reply}; roots=1"
    )
    assert texts["test_input_required_result_multi_round"] == "SDK user likes green"
    assert texts["test_input_required_result_capabilities"] == ("Answered: sampling, elicitation, roots")
    assert texts["multi_input"] == "name=SDK user, confirm=True"
    assert texts["confirm_delete"].startswith("Deleted sdk.txt")
    assert texts["greet"] == "Hello, SDK!"
    assert texts["slow_compute"] == "Computed sdk in 0 s"  # inline: the SDK declares no tasks
    assert texts["test_custom_headers"] == "region=eu-west1, priority=2, query="
    assert texts["test_missing_capability"] == f"LLM response: {reply}"
    prompt = out["prompt_results"]["test_input_required_result_prompt"]["messages"]
    assert prompt[0]["content"]["text"] == "Use this context: sdk context"
