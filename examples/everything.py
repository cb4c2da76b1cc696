"""The "everything" server: every fixture the official MCP conformance suite looks for.

The conformance suite (``@modelcontextprotocol/conformance``, server mode) acts as
a client and checks a server that offers a fixed set of tools, resources and
prompts with fixed names and contents.  This module is that server, written with
:class:`mcp_trio.server.Server`:

* tools: ``test_simple_text``, ``test_image_content``, ``test_audio_content``,
  ``test_embedded_resource``, ``test_multiple_content_types``,
  ``test_tool_with_logging``, ``test_tool_with_progress``,
  ``test_error_handling``, ``test_sampling``, ``test_elicitation``,
  ``test_elicitation_sep1034_defaults``, ``test_elicitation_sep1330_enums``,
  ``json_schema_2020_12_tool`` and ``test_reconnection``;
* multi-round-trip input (SEP-2322; a request to the client before
  2026-07-28): ``test_input_required_result_elicitation``, ``_sampling``,
  ``_list_roots``, ``_request_state``, ``_multiple_inputs``, ``_multi_round``,
  ``_tampered_state`` and ``_capabilities`` (all ``test_input_required_result_*``),
  with fixed input keys (``user_name``, ``capital_question``, ``client_roots`` ...);
* the Tasks extension (SEP-2663; 2025-11-25 tasks too): ``greet`` (never a
  task), ``slow_compute`` (optional), ``failing_job`` (required, ends with a
  tool error), ``protocol_error_job`` (optional, ends with a JSON-RPC error),
  ``confirm_delete`` and ``multi_input`` (optional, ask the user: one request,
  two at once) and ``test_tool_with_task`` (required; asks first through
  multi-round-trip results, then becomes a task);
* ``test_custom_headers``, whose ``region`` and ``priority`` arguments carry
  ``x-mcp-header`` (the ``Mcp-Param-*`` headers of 2026-07-28 HTTP, SEP-2243);
* stateless diagnostics (SEP-2575): ``test_missing_capability`` (needs
  sampling: -32021 without it), ``test_streaming_elicitation`` and
  ``test_logging_tool``; ``test_trigger_tool_change`` and
  ``test_trigger_prompt_change`` add a tool / prompt and take it away again,
  so that a list-change notification goes out (on ``subscriptions/listen``
  streams from 2026-07-28 on) while the lists stay as they are;
* resources: ``test://static-text``, ``test://static-binary``,
  ``test://watched-resource`` (subscribable) and the template
  ``test://template/{id}/data``;
* prompts: ``test_simple_prompt``, ``test_prompt_with_arguments``,
  ``test_prompt_with_embedded_resource``, ``test_prompt_with_image`` and
  ``test_input_required_result_prompt`` (asks for its context first);
* completions for the ``arg1`` argument of ``test_prompt_with_arguments`` and
  for the ``id`` variable of the resource template.

It speaks every protocol revision mcp_trio supports.  A fixture that needs a
feature the negotiated revision lacks answers with a tool error saying so:
audio content before 2025-03-26, elicitation before 2025-06-18, and the
SEP-1034 defaults and SEP-1330 enum forms before 2025-11-25.  Most of the
newer fixtures ask the client without checking its capabilities first: a
missing one is a tool error up to 2025-11-25 and -32021 from 2026-07-28 on.

Run it over stdio with either of::

    python examples/everything.py
    mcp-trio serve examples/everything.py

The module-level ``server`` is also usable in-process, e.g. with
``nursery.start(server.serve_session, channel)`` over a memory transport.
"""

from __future__ import annotations

import io
import json
import struct
import wave
import zlib
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import msgspec
import trio

from mcp_trio import INTERNAL_ERROR, LocalProtocolError, McpError, __version__
from mcp_trio.server import Audio, Context, Image, Server

# --------------------------------------------------------------- test data


def _png_pixel(red: int, green: int, blue: int, alpha: int = 255) -> bytes:
    """A 1x1 RGBA PNG of one colour."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)  # 1x1, 8-bit RGBA
    scanline = bytes([0, red, green, blue, alpha])  # filter type 0, then the pixel
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(scanline))
        + chunk(b"IEND", b"")
    )


def _wav_silence(frames: int = 1, rate: int = 8000) -> bytes:
    """A mono 16-bit PCM WAV file holding ``frames`` samples of silence."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"\x00\x00" * frames)
    return buffer.getvalue()


#: A 1x1 red pixel (``image/png``).
RED_PIXEL_PNG = _png_pixel(255, 0, 0)
#: One sample of silence (``audio/wav``).
SILENCE_WAV = _wav_silence()

SIMPLE_TEXT = "This is a simple text response for testing."
ERROR_TEXT = "This tool intentionally returns an error for testing"
STATIC_TEXT = "This is the content of the static text resource."
WATCHED_URI = "test://watched-resource"
WATCHED_TEXT = "Watched resource content"
TEMPLATE = "test://template/{id}/data"

#: The raw JSON Schema of ``json_schema_2020_12_tool``.  It is published as
#: written: the 2020-12 dialect, ``$defs`` with an ``$anchor``, a ``$ref``,
#: composition (``allOf``/``anyOf``), a conditional (``if``/``then``/``else``)
#: and ``additionalProperties: false`` must all reach the client unchanged.
JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

#: ``test_elicitation`` asks for these two strings.
CONTACT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}

#: SEP-1034: a default for each primitive type (string, integer, number, enum, boolean).
DEFAULTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}


def _titled(pairs: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"const": value, "title": title} for value, title in pairs]


#: SEP-1330: the five ways to write an enum in an elicitation form.
ENUMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        # 1. single choice, no titles
        "untitledSingle": {
            "type": "string",
            "description": "Select one option",
            "enum": ["option1", "option2", "option3"],
        },
        # 2. single choice with titles: oneOf of const/title pairs
        "titledSingle": {
            "type": "string",
            "description": "Select one option with titles",
            "oneOf": _titled(
                [
                    ("value1", "First Option"),
                    ("value2", "Second Option"),
                    ("value3", "Third Option"),
                ]
            ),
        },
        # 3. single choice with titles, the deprecated way: enumNames next to enum
        "legacyEnum": {
            "type": "string",
            "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        # 4. several choices, no titles: an array whose items are an enum
        "untitledMulti": {
            "type": "array",
            "description": "Select multiple options",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        # 5. several choices with titles: an array whose items are anyOf const/title
        "titledMulti": {
            "type": "array",
            "description": "Select multiple options with titles",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "anyOf": _titled(
                    [
                        ("value1", "First Choice"),
                        ("value2", "Second Choice"),
                        ("value3", "Third Choice"),
                    ]
                )
            },
        },
    },
    "required": [],
}

#: Candidates offered by completion/complete.
ARG1_CANDIDATES = ("alpha", "alpine", "beta", "gamma", "delta")
ID_CANDIDATES = ("1", "2", "3", "42", "123")

_FIRST_AUDIO = "2025-03-26"  # audio content exists from this revision on
_FIRST_ELICITATION = "2025-06-18"  # elicitation/create exists from this revision on
_FIRST_RICH_FORMS = "2025-11-25"  # defaults for every type, multi-select and titled enums

server = Server(
    "mcp-trio-everything",
    __version__,
    title="mcp-trio everything server",
    instructions="Fixture server for MCP conformance testing; every tool, resource and "
    "prompt returns fixed test content.",
)


def tool(fn: Any = None, **options: Any) -> Any:
    """Register a tool that builds its own MCP content (no structured output)."""
    return server.tool(fn, structured_output=False, **options)


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _tool_error(text: str) -> dict[str, Any]:
    return {"content": [_text(text)], "isError": True}


def _compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


# ------------------------------------------------------------------- tools


@tool
async def test_simple_text() -> str:
    """Tests simple text content response."""
    return SIMPLE_TEXT


@tool
async def test_image_content() -> Image:
    """Tests image content response (a 1x1 PNG)."""
    return Image(RED_PIXEL_PNG, "image/png")


@tool
async def test_audio_content(ctx: Context) -> Any:
    """Tests audio content response (a tiny WAV file)."""
    if ctx.protocol_version < _FIRST_AUDIO:
        return _tool_error(f"Audio content does not exist in protocol revision {ctx.protocol_version}")
    return Audio(SILENCE_WAV, "audio/wav")


@tool
async def test_embedded_resource() -> dict[str, Any]:
    """Tests embedded resource content response."""
    return {
        "type": "resource",
        "resource": {
            "uri": "test://embedded-resource",
            "mimeType": "text/plain",
            "text": "This is an embedded resource content.",
        },
    }


@tool
async def test_multiple_content_types() -> list[Any]:
    """Tests response with multiple content types (text, image, resource)."""
    return [
        _text("Multiple content types test:"),
        Image(RED_PIXEL_PNG, "image/png"),
        {
            "type": "resource",
            "resource": {
                "uri": "test://mixed-content-resource",
                "mimeType": "application/json",
                "text": _compact_json({"test": "data", "value": 123}),
            },
        },
    ]


@tool
async def test_tool_with_logging(ctx: Context) -> str:
    """Tests tool that emits log messages during execution."""
    await ctx.info("Tool execution started")
    await trio.sleep(0.05)
    await ctx.info("Tool processing data")
    await trio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@tool
async def test_tool_with_progress(ctx: Context) -> str:
    """Tests tool that reports progress notifications (0, 50 and 100 of 100)."""
    for step in (0, 50, 100):
        if step:
            await trio.sleep(0.05)
        await ctx.report_progress(step, 100, f"Completed step {step} of 100")
    token = ctx.request.progress_token
    return str(token) if token is not None else "no progress token was given"


@tool
async def test_error_handling() -> dict[str, Any]:
    """Tests error response handling (a tool result with isError, not a JSON-RPC error)."""
    return _tool_error(ERROR_TEXT)


@tool
async def test_sampling(
    prompt: Annotated[str, msgspec.Meta(description="The prompt to send to the LLM")],
    ctx: Context,
) -> Any:
    """Tests server-initiated sampling (LLM completion request)."""
    try:
        result = await ctx.sample(prompt, max_tokens=100)
    except (McpError, LocalProtocolError, trio.TooSlowError) as exc:
        return _tool_error(f"Sampling not supported or error: {exc}")
    return f"LLM response: {_sampled_text(result)}"


def _sampled_text(result: Any) -> str:
    """The first text block of a ``CreateMessageResult``."""
    content = result.content
    blocks = content if isinstance(content, list) else [content]
    texts = [block.text for block in blocks if isinstance(getattr(block, "text", None), str)]
    return texts[0] if texts else "No response"


async def _elicit(
    ctx: Context,
    message: str,
    schema: dict[str, Any],
    label: str,
    since: str = _FIRST_ELICITATION,
) -> Any:
    version = ctx.protocol_version
    if version < since:
        what = "elicitation" if version < _FIRST_ELICITATION else "this elicitation form"
        return _tool_error(
            f"Elicitation not supported or error: {what} does not exist in protocol revision {version}"
        )
    try:
        result = await ctx.elicit(message, schema)
    except (McpError, LocalProtocolError, trio.TooSlowError) as exc:
        return _tool_error(f"Elicitation not supported or error: {exc}")
    content = result.content if isinstance(result.content, dict) else {}
    return f"{label}: action={result.action}, content={_compact_json(content)}"


@tool
async def test_elicitation(
    message: Annotated[str, msgspec.Meta(description="The message to show the user")],
    ctx: Context,
) -> Any:
    """Tests server-initiated elicitation (user input request)."""
    return await _elicit(ctx, message, CONTACT_SCHEMA, "User response")


@tool
async def test_elicitation_sep1034_defaults(ctx: Context) -> Any:
    """Tests elicitation with default values for all primitive types (SEP-1034)."""
    return await _elicit(
        ctx,
        "Please review and update the form fields with defaults",
        DEFAULTS_SCHEMA,
        "Elicitation completed",
        since=_FIRST_RICH_FORMS,
    )


@tool
async def test_elicitation_sep1330_enums(ctx: Context) -> Any:
    """Tests elicitation with the five enum schema forms of SEP-1330."""
    return await _elicit(
        ctx,
        "Please select options from the enum fields",
        ENUMS_SCHEMA,
        "Elicitation completed",
        since=_FIRST_RICH_FORMS,
    )


@server.tool(
    name="json_schema_2020_12_tool",
    description="Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613, SEP-2106).",
    input_schema=JSON_SCHEMA_2020_12,
)
async def json_schema_2020_12_tool(arguments: dict[str, Any]) -> str:
    return f"JSON Schema 2020-12 tool called with: {_compact_json(arguments)}"


@tool
async def test_reconnection(ctx: Context) -> str:
    """Tests SSE stream disconnection and client reconnection (SEP-1699)."""
    # Over Streamable HTTP (2025-11-25 on) the request's SSE stream ends here,
    # mid-call; the client reconnects (GET with Last-Event-ID) after the retry
    # delay and receives the rest of the stream, result included.  Transports
    # without response streams (stdio, in-memory) keep going as if nothing
    # happened.
    await ctx.info("Before disconnect")
    await ctx.close_stream()
    await trio.sleep(0.1)
    await ctx.info("After reconnect")
    return "Reconnection test completed"


# ------------------------------------- multi-round-trip input (SEP-2322)
#
# From 2026-07-28 on, what a handler asks the client ends the round with an
# InputRequiredResult (the keys below name its inputRequests) and the retry
# carries the answers; in older revisions each ask is a request to the client.

NAME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
COLOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"color": {"type": "string"}},
    "required": ["color"],
}
OK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}
CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "description": "Go ahead?"}},
    "required": ["confirm"],
}
CONTEXT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"context": {"type": "string"}},
    "required": ["context"],
}


def _field(result: Any, name: str) -> Any:
    """Field ``name`` of an accepted elicitation, else a note of what happened."""
    if result.action != "accept":
        return f"({result.action})"
    content = result.content if isinstance(result.content, dict) else {}
    return content.get(name, "(no answer)")


async def _gather(*asks: Callable[[], Awaitable[Any]]) -> list[Any]:
    """Ask concurrently: in 2026-07-28 every ask joins the same InputRequiredResult."""
    results: list[Any] = [None] * len(asks)

    async def run(index: int, ask: Callable[[], Awaitable[Any]]) -> None:
        results[index] = await ask()

    async with trio.open_nursery() as nursery:
        for index, ask in enumerate(asks):
            nursery.start_soon(run, index, ask)
    return results


@tool
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Asks the user's name (elicitation, input key ``user_name``), then greets them."""
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA, input_key="user_name")
    return f"Hello, {_field(answer, 'name')}!"


@tool
async def test_input_required_result_sampling(ctx: Context) -> str:
    """Asks the client's LLM a question (sampling, input key ``capital_question``)."""
    result = await ctx.sample("What is the capital of France?", max_tokens=100, input_key="capital_question")
    return f"LLM response: {_sampled_text(result)}"


@tool
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """Asks for the client's roots (roots/list, input key ``client_roots``)."""
    result = await ctx.list_roots(input_key="client_roots")
    uris = [root.uri for root in result.roots]
    return f"Client roots: {', '.join(uris) if uris else '(none)'}"


@tool
async def test_input_required_result_request_state(ctx: Context) -> str:
    """Asks for a confirmation (input key ``confirm``); the answer of the retry is
    accepted only with the signed request state of the first round."""
    answer = await ctx.elicit("Please confirm", OK_SCHEMA, input_key="confirm")
    if ctx.protocol_version >= "2026-07-28":
        return f"state-ok: the request state verified; ok={_field(answer, 'ok')}"
    return f"Confirmed: ok={_field(answer, 'ok')}"


@tool
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Asks for three inputs at once: elicitation (``user_name``), sampling
    (``greeting``) and roots (``client_roots``)."""
    name, greeting, roots = await _gather(
        lambda: ctx.elicit("What is your name?", NAME_SCHEMA, input_key="user_name"),
        lambda: ctx.sample("Generate a greeting", max_tokens=50, input_key="greeting"),
        lambda: ctx.list_roots(input_key="client_roots"),
    )
    return f"name={_field(name, 'name')}; greeting={_sampled_text(greeting)}; roots={len(roots.roots)}"


@tool
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Asks in two rounds: a name (``step1``), then a colour (``step2``)."""
    name = await ctx.elicit("Step 1: What is your name?", NAME_SCHEMA, input_key="step1")
    color = await ctx.elicit("Step 2: What is your favorite color?", COLOR_SCHEMA, input_key="step2")
    return f"{_field(name, 'name')} likes {_field(color, 'color')}"


@tool
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """Asks for a confirmation (``confirm``); a retry whose request state was
    altered is refused (-32602), as the state is HMAC-signed."""
    answer = await ctx.elicit("Please confirm", OK_SCHEMA, input_key="confirm")
    return f"Confirmed: ok={_field(answer, 'ok')}"


@tool
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Asks only for what the client declared: sampling (``sampling``),
    elicitation (``elicitation``) and roots (``roots``), all at once."""
    declared = ctx.client_capabilities
    asks: dict[str, Callable[[], Awaitable[Any]]] = {}
    if isinstance(declared.get("sampling"), dict):
        asks["sampling"] = lambda: ctx.sample("Say hello", max_tokens=20, input_key="sampling")
    if isinstance(declared.get("elicitation"), dict):
        asks["elicitation"] = lambda: ctx.elicit("What is your name?", NAME_SCHEMA, input_key="elicitation")
    if isinstance(declared.get("roots"), dict):
        asks["roots"] = lambda: ctx.list_roots(input_key="roots")
    if not asks:
        return "The client declared none of sampling, elicitation and roots; nothing to ask."
    await _gather(*asks.values())
    return f"Answered: {', '.join(asks)}"


# ------------------------------------------- Tasks extension (SEP-2663)
#
# With a client that declares io.modelcontextprotocol/tasks (2026-07-28),
# tools with task support answer with a task; as 2025-11-25 tasks they run
# as a task when the client asks for one.


@tool
async def greet(name: Annotated[str, msgspec.Meta(description="Who to greet")]) -> str:
    """Greets by name; never runs as a task."""
    return f"Hello, {name}!"


@tool(task_support="optional")
async def slow_compute(
    seconds: Annotated[
        float, msgspec.Meta(ge=0, le=3600, description="How long the computation takes")
    ] = 1.0,
    label: Annotated[str, msgspec.Meta(description="A label echoed in the result")] = "",
) -> str:
    """Sleeps ``seconds``, then returns; runs as a task where it can (cancellable)."""
    await trio.sleep(seconds)
    return f"Computed {label or 'the result'} in {seconds:g} s"


@tool(task_support="required")
async def failing_job() -> Any:
    """Runs only as a task; ends after about a second with a tool execution
    error (isError: true, so the task completes rather than fails)."""
    await trio.sleep(1)
    return _tool_error("failing_job: the job failed, on purpose")


@tool(task_support="optional")
async def protocol_error_job() -> Any:
    """Fails with a JSON-RPC error (-32603), so its task ends ``failed``."""
    await trio.sleep(0.05)
    raise McpError(INTERNAL_ERROR, "protocol_error_job: internal failure, on purpose")


@tool(task_support="optional")
async def confirm_delete(
    filename: Annotated[str, msgspec.Meta(description="The file to pretend to delete")],
    ctx: Context,
) -> str:
    """Asks the user to confirm (elicitation, key ``confirm``), then answers;
    as a task it waits in ``input_required`` for ``tasks/update``.  Deletes nothing."""
    answer = await ctx.elicit(f"Delete {filename}?", CONFIRM_SCHEMA, input_key="confirm")
    if _field(answer, "confirm") is True:
        return f"Deleted {filename} (not really: this is a test fixture)"
    return f"Kept {filename}"


@tool(task_support="optional")
async def multi_input(ctx: Context) -> str:
    """Asks two things at once (keys ``name`` and ``confirm``), so that two
    input requests are outstanding together."""
    name, confirm = await _gather(
        lambda: ctx.elicit("What is your name?", NAME_SCHEMA, input_key="name"),
        lambda: ctx.elicit("Do you confirm?", CONFIRM_SCHEMA, input_key="confirm"),
    )
    return f"name={_field(name, 'name')}, confirm={_field(confirm, 'confirm')}"


@tool(task_support="required", defer_task=True)
async def test_tool_with_task(ctx: Context) -> str:
    """Asks the user's name first (multi-round-trip, key ``user_name``), then
    goes on as a task whose result greets them."""
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA, input_key="user_name")
    name = _field(answer, "name")
    await ctx.start_task()
    await trio.sleep(0.1)
    return f"Hello, {name}! (finished as a task)"


# --------------------------------------- HTTP request headers (SEP-2243)


@tool
async def test_custom_headers(
    region: Annotated[
        str,
        msgspec.Meta(
            description="A region, mirrored in the Mcp-Param-Region header",
            extra_json_schema={"x-mcp-header": "Region"},
        ),
    ],
    priority: Annotated[
        int,
        msgspec.Meta(
            description="A priority, mirrored in the Mcp-Param-Priority header",
            extra_json_schema={"x-mcp-header": "Priority"},
        ),
    ] = 0,
    query: Annotated[str, msgspec.Meta(description="Not mirrored in any header")] = "",
) -> str:
    """Echoes its arguments; over Streamable HTTP (2026-07-28) the server checks
    the ``Mcp-Param-*`` headers against them."""
    return f"region={region}, priority={priority}, query={query}"


# ------------------------------------- stateless diagnostics (SEP-2575)


@tool
async def test_missing_capability(ctx: Context) -> str:
    """Needs the client's sampling capability; from 2026-07-28 on a call that
    does not declare it is refused with -32021 naming ``sampling``."""
    result = await ctx.sample("Reply with one word.", max_tokens=10, input_key="sampling")
    return f"LLM response: {_sampled_text(result)}"


@tool
async def test_streaming_elicitation(ctx: Context) -> str:
    """Elicits while the call is open: a request to the client in older
    revisions, an InputRequiredResult from 2026-07-28 on (never a request on
    the response stream)."""
    await ctx.info("test_streaming_elicitation: asking the user")
    answer = await ctx.elicit("Please confirm to continue", CONFIRM_SCHEMA, input_key="confirm")
    return f"Streaming elicitation answered: confirm={_field(answer, 'confirm')}"


@tool
async def test_logging_tool(ctx: Context) -> str:
    """Logs at info, warning and error; only to clients that asked for a level
    (``logging/setLevel``, or ``_meta`` logLevel from 2026-07-28 on)."""
    await ctx.info("test_logging_tool: info")
    await ctx.warning("test_logging_tool: warning")
    await ctx.error("test_logging_tool: error")
    return "Logged three messages"


@tool
async def test_trigger_tool_change() -> str:
    """Adds ``test_dynamic_tool`` and takes it away again: the tool list
    changed (twice), and ends as it was."""
    server.tool(_dynamic, name="test_dynamic_tool")
    server.remove_tool("test_dynamic_tool")
    return "the tool list changed"


@tool
async def test_trigger_prompt_change() -> str:
    """Adds ``test_dynamic_prompt`` and takes it away again: the prompt list
    changed (twice), and ends as it was."""
    server.prompt(_dynamic, name="test_dynamic_prompt")
    server.remove_prompt("test_dynamic_prompt")
    return "the prompt list changed"


def _dynamic() -> str:
    """Exists only for a moment (see the test_trigger_* tools)."""
    return "dynamic"


# --------------------------------------------------------------- resources


@server.resource("test://static-text", name="static-text", mime_type="text/plain")
async def static_text() -> str:
    """A static text resource for testing."""
    return STATIC_TEXT


@server.resource("test://static-binary", name="static-binary", mime_type="image/png")
async def static_binary() -> bytes:
    """A static binary resource (image) for testing."""
    return RED_PIXEL_PNG


@server.resource(TEMPLATE, name="template", mime_type="application/json")
async def template_data(id: str) -> str:
    """A resource template with parameter substitution."""
    return _compact_json({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.resource(WATCHED_URI, name="watched-resource", mime_type="text/plain")
async def watched_resource() -> str:
    """A resource clients may subscribe to (resources/subscribe)."""
    return WATCHED_TEXT


# ----------------------------------------------------------------- prompts


@server.prompt
async def test_simple_prompt() -> str:
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


@server.prompt
async def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with required arguments (arg1 and arg2)."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt
async def test_prompt_with_embedded_resource(resourceUri: str) -> list[Any]:
    """A prompt that includes an embedded resource (resourceUri names it)."""
    embedded = {
        "type": "resource",
        "resource": {
            "uri": resourceUri,
            "mimeType": "text/plain",
            "text": "Embedded resource content for testing.",
        },
    }
    return [
        {"role": "user", "content": embedded},
        "Please process the embedded resource above.",
    ]


@server.prompt
async def test_prompt_with_image() -> list[Any]:
    """A prompt that includes image content."""
    return [
        {"role": "user", "content": Image(RED_PIXEL_PNG, "image/png").block()},
        "Please analyze the image above.",
    ]


@server.prompt
async def test_input_required_result_prompt(ctx: Context) -> str:
    """A prompt that first asks the user for its context (elicitation, key
    ``user_context``)."""
    answer = await ctx.elicit("What context should the prompt use?", CONTEXT_SCHEMA, input_key="user_context")
    return f"Use this context: {_field(answer, 'context')}"


# ------------------------------------------------------------- completions


def _starting_with(candidates: tuple[str, ...], prefix: str) -> list[str]:
    prefix = prefix.casefold()
    return [c for c in candidates if c.casefold().startswith(prefix)]


@server.completion("test_prompt_with_arguments", "arg1")
async def complete_arg1(value: str, context_arguments: dict[str, str]) -> list[str]:
    return _starting_with(ARG1_CANDIDATES, value)


@server.completion(TEMPLATE, "id")
async def complete_template_id(value: str, context_arguments: dict[str, str]) -> list[str]:
    return _starting_with(ID_CANDIDATES, value)


if __name__ == "__main__":
    trio.run(server.serve_stdio)
