"""Drive the everything example with the official Python SDK's client (for the interop tests).

Usage: sdk_everything_client.py [--mode legacy|auto] -- CMD [ARG...]

Launches CMD with the SDK's stdio client (``legacy``: the initialize handshake;
``auto``: the SDK's server/discover probe), with sampling, elicitation and logging
callbacks (and a roots list), then lists and calls every tool (a tool answering with a
JSON-RPC error is recorded as ``{"error": {...}}``), reads every resource and template,
gets every prompt, asks for completions and (on handshake-era revisions)
subscribes to the watched resource.  It prints ONE JSON line with everything it
observed, in wire shape (camelCase), and exits 0; on any failure it prints the
error to stderr and exits 1.  Runs on anyio (asyncio); never import it from trio.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import traceback
import warnings
from typing import Any

import anyio
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import (
    CreateMessageResult,
    ElicitResult,
    Implementation,
    ListRootsResult,
    PromptReference,
    ResourceTemplateReference,
    Root,
    TextContent,
)

SAMPLING_REPLY = "This is a test response from the client"

# What the "user" answers to each elicitation form, told apart by its fields.
ANSWERS: list[tuple[str, dict[str, Any]]] = [
    ("username", {"username": "testuser", "email": "test@example.com"}),
    (
        "age",
        {"name": "Jane Smith", "age": 25, "score": 88.5, "status": "inactive", "verified": False},
    ),
    (
        "untitledSingle",
        {
            "untitledSingle": "option1",
            "titledSingle": "value2",
            "legacyEnum": "opt3",
            "untitledMulti": ["option1", "option2"],
            "titledMulti": ["value1", "value3"],
        },
    ),
    # the multi-round-trip and task fixtures
    ("name", {"name": "SDK user"}),
    ("ok", {"ok": True}),
    ("confirm", {"confirm": True}),
    ("color", {"color": "green"}),
    ("context", {"context": "sdk context"}),
]
ROOT_URI = "file:///sdk/root"

TOOL_ARGUMENTS: dict[str, dict[str, Any]] = {
    "test_sampling": {"prompt": "Test prompt for sampling"},
    "test_elicitation": {"message": "Please provide your information"},
    "json_schema_2020_12_tool": {"name": "Ann", "email": "ann@example.com"},
    "greet": {"name": "SDK"},
    "slow_compute": {"seconds": 0, "label": "sdk"},
    "confirm_delete": {"filename": "sdk.txt"},
    "test_custom_headers": {"region": "eu-west1", "priority": 2},
}

PROMPT_ARGUMENTS: dict[str, dict[str, str]] = {
    "test_prompt_with_arguments": {"arg1": "hello", "arg2": "world"},
    "test_prompt_with_embedded_resource": {"resourceUri": "test://example-resource"},
}


def wire(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def run(args: argparse.Namespace, errlog: Any) -> dict[str, Any]:
    command, *argv = args.command
    env = {k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}
    params = StdioServerParameters(command=command, args=argv, env=env)
    out: dict[str, Any] = {"mode": args.mode}
    sampling: list[Any] = []
    elicitations: list[Any] = []
    logs: list[list[Any]] = []

    async def on_sampling(context: Any, request: Any) -> Any:
        sampling.append(wire(request))
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text=SAMPLING_REPLY),
            model="test-model",
            stop_reason="endTurn",
        )

    async def on_elicitation(context: Any, request: Any) -> Any:
        elicitations.append(wire(request))
        fields = (request.requested_schema or {}).get("properties", {})
        for marker, answer in ANSWERS:
            if marker in fields:
                return ElicitResult(action="accept", content=answer)
        return ElicitResult(action="decline")

    async def on_log(notification: Any) -> None:
        logs.append([notification.level, notification.data])

    async def on_roots(context: Any) -> Any:
        return ListRootsResult(roots=[Root(uri=ROOT_URI, name="SDK root")])

    client = Client(
        stdio_client(params, errlog=errlog),
        mode=args.mode,
        client_info=Implementation(name="sdk-everything-client", version="1.0"),
        cache=None,
        sampling_callback=on_sampling,
        elicitation_callback=on_elicitation,
        list_roots_callback=on_roots,
        logging_callback=on_log,
        log_level="debug",  # the 2026-07-28 opt-in to log messages; ignored by the handshake era
    )
    async with client:
        modern = client.protocol_version >= "2026-07-28"
        out["protocol_version"] = client.protocol_version
        info = client.server_info
        out["server_info"] = None if info is None else wire(info)
        out["server_capabilities"] = wire(client.server_capabilities)

        if not modern:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated as of 2026-07-28, current here
                out["set_level"] = wire(await client.set_logging_level("debug"))

        tools = (await client.list_tools()).tools
        out["tools"] = {tool.name: wire(tool) for tool in tools}

        calls: dict[str, Any] = {}
        progress: list[list[Any]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append([value, total, message])

        for tool in tools:
            try:
                result = await client.call_tool(
                    tool.name,
                    TOOL_ARGUMENTS.get(tool.name, {}),
                    progress_callback=on_progress if tool.name == "test_tool_with_progress" else None,
                )
            except MCPError as exc:
                calls[tool.name] = {"error": {"code": exc.code, "message": exc.message}}
            else:
                calls[tool.name] = wire(result)
        out["calls"] = calls
        out["progress"] = progress
        out["sampling_requests"] = sampling
        out["elicitation_requests"] = elicitations

        resources = (await client.list_resources()).resources
        out["resources"] = [wire(r) for r in resources]
        templates = (await client.list_resource_templates()).resource_templates
        out["templates"] = [wire(t) for t in templates]
        reads: dict[str, Any] = {}
        for uri in [str(r.uri) for r in resources] + ["test://template/123/data"]:
            reads[uri] = wire(await client.read_resource(uri))
        out["reads"] = reads

        if not modern:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # removed as of 2026-07-28, current here
                watched = "test://watched-resource"
                out["subscribe"] = wire(await client.subscribe_resource(watched))
                out["unsubscribe"] = wire(await client.unsubscribe_resource(watched))

        prompts = (await client.list_prompts()).prompts
        out["prompts"] = {p.name: wire(p) for p in prompts}
        out["prompt_results"] = {
            p.name: wire(await client.get_prompt(p.name, PROMPT_ARGUMENTS.get(p.name))) for p in prompts
        }

        prompt_ref = PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
        template_ref = ResourceTemplateReference(type="ref/resource", uri="test://template/{id}/data")
        out["complete_arg1"] = wire(await client.complete(prompt_ref, {"name": "arg1", "value": "al"}))
        out["complete_id"] = wire(await client.complete(template_ref, {"name": "id", "value": "4"}))

        await anyio.sleep(0.05)  # log notifications sent during the last calls
        out["logs"] = logs

    errlog.seek(0)
    out["server_stderr"] = errlog.read()[-4000:]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="legacy", help="legacy, auto, or a modern version")
    parser.add_argument("command", nargs="+", help="the server command line (after --)")
    args = parser.parse_args()
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        try:
            out = anyio.run(run, args, errlog)
        except BaseException:
            traceback.print_exc()
            errlog.seek(0)
            print("--- server stderr ---\n" + errlog.read()[-4000:], file=sys.stderr)
            return 1
    print(json.dumps(out, ensure_ascii=False, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
