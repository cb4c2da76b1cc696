"""Drive the everything example with the official Python SDK's client (for the interop tests).

Usage: sdk_everything_client.py [--mode legacy|auto] (-- CMD [ARG...] | --url URL)

Launches CMD with the SDK's stdio client, or connects to URL with its Streamable
HTTP client (``legacy``: the initialize handshake; ``auto``: the SDK's
server/discover probe), with sampling, elicitation and logging
callbacks (and a roots list), then lists and calls every tool (a tool answering with a
JSON-RPC error is recorded as ``{"error": {...}}``), reads every resource and template,
gets every prompt, asks for completions and (on handshake-era revisions)
subscribes to the watched resource.  Over HTTP it also cancels a slow call
(``cancellation``) and, on 2026-07-28, runs tools as tasks of the Tasks
extension through a second client (``tasks``: the SDK has no task API of its
own, so :class:`TasksExtension` follows them with the SDK's extension hooks).
It prints ONE JSON line with everything it observed, in wire shape (camelCase),
and exits 0; on any failure it prints the error to stderr and exits 1.  Runs on
anyio (asyncio); never import it from trio.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import traceback
import warnings
from typing import Any, Literal

import anyio
from mcp.client.client import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import (
    CallToolResult,
    CreateMessageResult,
    ElicitResult,
    Implementation,
    ListRootsResult,
    PromptReference,
    Request,
    ResourceTemplateReference,
    Result,
    Root,
    TextContent,
)
from pydantic import TypeAdapter

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
CANCEL_AFTER = 1.0  # seconds before the slow call is abandoned

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


TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TASK_TIMEOUT = 20.0  # seconds for one task to end
ANY_RESULT: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])


class TaskCreated(Result):
    """The Tasks extension's answer to a ``tools/call`` run as a task (``resultType: "task"``)."""

    result_type: Literal["task"]
    task_id: str
    status: str
    poll_interval_ms: int | None = None


class TaskRequest(Request[dict[str, Any], str]):
    """``tasks/get``, ``tasks/update`` or ``tasks/cancel`` (``Mcp-Name`` carries the task id)."""

    name_param = "taskId"


def answer_elicitation(schema: dict[str, Any] | None) -> dict[str, Any]:
    """What the "user" answers to an elicitation form (see ``ANSWERS``), in wire shape."""
    fields = (schema or {}).get("properties", {})
    for marker, answer in ANSWERS:
        if marker in fields:
            return {"action": "accept", "content": answer}
    return {"action": "decline"}


class TasksExtension(ClientExtension):
    """The Tasks extension on the SDK's extension hooks: a task the server starts for a
    ``tools/call`` is polled with ``tasks/get`` (its questions answered with ``tasks/update``)
    until it ends; every status seen is kept in ``seen`` (by task id)."""

    identifier = TASKS_EXTENSION

    def __init__(self) -> None:
        self.seen: dict[str, list[str]] = {}

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=TaskCreated, resolve=self.follow)]

    async def follow(self, created: TaskCreated, ctx: ClaimContext) -> CallToolResult:
        seen = self.seen.setdefault(created.task_id, [created.status])
        with anyio.fail_after(TASK_TIMEOUT):
            while True:
                task = await task_request(ctx.session, "tasks/get", created.task_id)
                seen.append(task["status"])
                if task["status"] == "completed":
                    return CallToolResult.model_validate(task["result"])
                if task["status"] in ("failed", "cancelled"):
                    raise RuntimeError(f"task {created.task_id} ended {task['status']}: {task}")
                if task["status"] == "input_required":
                    responses = {
                        key: answer_elicitation(ask["params"].get("requestedSchema"))
                        for key, ask in task.get("inputRequests", {}).items()
                    }
                    if not responses:
                        raise RuntimeError(
                            f"task {created.task_id} is input_required, asking nothing: {task}"
                        )
                    await task_request(ctx.session, "tasks/update", created.task_id, inputResponses=responses)
                    await anyio.sleep(0.05)  # (the answers reach the task's worker meanwhile)
                else:
                    await anyio.sleep((task.get("pollIntervalMs") or 100) / 1000)


async def task_request(session: Any, method: str, task_id: str, **params: Any) -> dict[str, Any]:
    request = TaskRequest(method=method, params={"taskId": task_id, **params})
    return await session.send_request(request, ANY_RESULT)


async def run_tasks(url: str) -> dict[str, Any]:
    """Tools run as tasks of the Tasks extension (2026-07-28), by a client that declares it."""
    extension = TasksExtension()
    out: dict[str, Any] = {}

    async def on_elicitation(context: Any, request: Any) -> Any:  # (declares the capability)
        return ElicitResult.model_validate(answer_elicitation(request.requested_schema))

    client = Client(url, mode="auto", extensions=[extension], elicitation_callback=on_elicitation, cache=None)
    async with client:
        out["protocol_version"] = client.protocol_version
        out["extensions"] = wire(client.server_capabilities).get("extensions", {})
        await client.list_tools()
        results = {}
        for name, arguments in [
            ("slow_compute", {"seconds": 0.5, "label": "a task"}),
            ("confirm_delete", {"filename": "task.txt"}),
            ("multi_input", {}),
            ("failing_job", {}),
        ]:
            results[name] = wire(await client.call_tool(name, arguments))
        out["results"] = results
        out["statuses"] = list(extension.seen.values())
        # a task cancelled with tasks/cancel (the claimed answer taken as it is)
        created = await client.session.call_tool(
            "slow_compute", {"seconds": 30, "label": "cancelled"}, allow_claimed=True
        )
        assert isinstance(created, TaskCreated), created
        out["cancel"] = await task_request(client.session, "tasks/cancel", created.task_id)
        with anyio.fail_after(TASK_TIMEOUT):
            while (task := await task_request(client.session, "tasks/get", created.task_id))["status"] in (
                "working",
            ):
                await anyio.sleep(0.05)
        out["cancelled"] = task
    return out


def transport(args: argparse.Namespace, errlog: Any) -> Any:
    """The SDK's Streamable HTTP client for ``--url``, else its stdio client launching the command."""
    if args.url:
        return streamable_http_client(args.url)
    command, *argv = args.command
    env = {k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}
    return stdio_client(StdioServerParameters(command=command, args=argv, env=env), errlog=errlog)


async def cancellation(client: Client) -> dict[str, Any]:
    """A slow call abandoned by the caller (the SDK tells the server), then a call on the same client."""
    started = anyio.current_time()
    with anyio.move_on_after(CANCEL_AFTER) as scope:
        await client.call_tool("slow_compute", {"seconds": 30, "label": "cancel me"})
    after = await client.call_tool("greet", {"name": "after the cancel"})
    return {
        "cancelled": scope.cancelled_caught,
        "elapsed": anyio.current_time() - started,
        "after": wire(after),
    }


async def run(args: argparse.Namespace, errlog: Any) -> dict[str, Any]:
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
        return ElicitResult.model_validate(answer_elicitation(request.requested_schema))

    async def on_log(notification: Any) -> None:
        logs.append([notification.level, notification.data])

    async def on_roots(context: Any) -> Any:
        return ListRootsResult(roots=[Root(uri=ROOT_URI, name="SDK root")])

    client = Client(
        transport(args, errlog),
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

        if args.url:
            out["cancellation"] = await cancellation(client)

        await anyio.sleep(0.05)  # log notifications sent during the last calls
        out["logs"] = logs

    if args.url and out["protocol_version"] >= "2026-07-28":
        out["tasks"] = await run_tasks(args.url)

    errlog.seek(0)
    out["server_stderr"] = errlog.read()[-4000:]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="legacy", help="legacy, auto, or a modern version")
    parser.add_argument("--url", help="a Streamable HTTP endpoint (instead of a command)")
    parser.add_argument("command", nargs="*", help="the server command line (after --)")
    args = parser.parse_args()
    if bool(args.url) == bool(args.command):
        parser.error("give either a server command (after --) or --url, not both")
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
