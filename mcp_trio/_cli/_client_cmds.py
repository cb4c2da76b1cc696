"""mcp-trio list, call and inspect: poke any MCP server from the command line.

TARGET is a command line to start as a stdio server (one argument, split like
a shell would: ``"python server.py"``; or everything after ``--``), an
``http(s)://`` URL (Streamable HTTP) or a ``ws(s)://`` URL (WebSocket).

Exit codes (for scripts):

* 0: success;
* 1: the server answered with a failure: a tool result with ``isError``, or
  a JSON-RPC error reply (an unknown tool, invalid arguments ...), or an
  invalid answer (a ``structuredContent`` that does not match the tool's
  ``outputSchema`` ...);
* 2: a usage error, the target cannot be started or reached, the connection
  broke, or ``--timeout`` passed.

Errors are one line on stderr naming the problem; results go to stdout
(``call`` always prints JSON; ``list`` and ``inspect`` print text, or JSON
with ``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from typing import Any

import msgspec
import trio

from .._exceptions import ConnectionClosed, McpError, RemoteProtocolError
from .._version import __version__

__all__ = ["COMMANDS", "add_parsers", "command"]

COMMANDS = ("list", "call", "inspect")
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_ITEMS = 10_000  # of each kind ``list`` shows: a server's pages need not end
_EXIT_FAILED = 1  # the server answered with a failure
_EXIT_USAGE = 2  # usage, connection, start-up or timeout


class _Fatal(Exception):
    """A problem that ends the command with exit code 2 (the message says what)."""


# ----------------------------------------------------------------- the parser


def _parser(name: str) -> argparse.ArgumentParser:
    helps = {
        "list": "list the tools, resources, resource templates and prompts of a server",
        "call": "call a tool and print its result as JSON",
        "inspect": "show a server's info, negotiated revision, capabilities and instructions",
    }
    usage_target = "TARGET" if name != "call" else "TARGET TOOL [KEY=VALUE ...]"
    p = argparse.ArgumentParser(
        prog=f"mcp-trio {name}",
        description=helps[name] + ".  TARGET is a command line (one argument, or everything after "
        "'--'), an http(s):// URL (Streamable HTTP) or a ws(s):// URL (WebSocket).  Exit codes: 0 "
        "success, 1 the server answered with a failure (isError, JSON-RPC error), 2 usage error, "
        "cannot start or reach the target, or timeout.",
        usage=f"mcp-trio {name} [options] {usage_target}\n       mcp-trio {name} [options] "
        + ("TOOL [KEY=VALUE ...] " if name == "call" else "")
        + "-- COMMAND [ARG ...]",
    )
    p.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"seconds allowed for the whole command, connecting included (default: {DEFAULT_TIMEOUT:g})",
    )
    p.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an HTTP header for every request to a URL target (repeatable), "
        "e.g. --header 'Authorization: Bearer TOKEN'",
    )
    if name == "call":
        p.add_argument(
            "--json",
            dest="arguments",
            metavar="OBJECT",
            help="the tool's arguments as one JSON object (KEY=VALUE pairs are merged over it)",
        )
    else:
        p.add_argument("--json", action="store_true", help="print JSON instead of text")
    if name == "list":
        p.add_argument(
            "--max-items",
            type=int,
            default=DEFAULT_MAX_ITEMS,
            metavar="N",
            help=f"list at most N of each kind, following pages (default: {DEFAULT_MAX_ITEMS})",
        )
    return p


def add_parsers(sub: Any) -> None:
    """List the client commands in the main parser's help (``command`` parses them)."""
    for name in COMMANDS:
        sub.add_parser(name, help=(_parser(name).description or "").split(".")[0], add_help=False)


def command(argv: Sequence[str]) -> int:
    """Run ``mcp-trio list|call|inspect ...`` (``argv`` starts with the command's name)."""
    name, argv = argv[0], list(argv[1:])
    parser = _parser(name)
    spawn: list[str] | None = None
    if "--" in argv:
        cut = argv.index("--")
        argv, spawn = argv[:cut], argv[cut + 1 :]
    args = parser.parse_args(argv)
    rest: list[str] = args.rest
    try:
        if spawn is None:
            if not rest:
                raise _Fatal("give a TARGET: a command line, an http(s):// URL or a ws(s):// URL")
            target: str | list[str] = rest.pop(0)
        else:
            if not spawn:
                raise _Fatal("give the command to start after '--'")
            target = spawn
        if name == "call":
            if not rest:
                raise _Fatal("give the name of the tool to call")
            run: Callable[[Any], Any] = _call_runner(rest[0], _arguments(args.arguments, rest[1:]))
        elif rest:
            raise _Fatal(f"unexpected arguments: {' '.join(rest)}")
        elif name == "list":
            run = partial(_list, max_items=args.max_items)
        else:
            run = _inspect
        connection = _Connection(target, _headers(args.header), args.timeout)
    except _Fatal as exc:
        parser.print_usage(sys.stderr)
        print(f"mcp-trio {name}: {exc}", file=sys.stderr)
        return _EXIT_USAGE
    try:
        return trio.run(_main, name, connection, run, getattr(args, "json", False))
    except KeyboardInterrupt:
        print(f"mcp-trio {name}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (``| head``): no traceback, and none at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return _EXIT_FAILED


def _headers(given: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in given:
        key, sep, value = line.partition(":")
        if not sep or not key.strip() or key != key.strip():
            raise _Fatal(f"--header takes 'NAME: VALUE', not {line!r}")
        headers[key] = value.strip()
    return headers


def _arguments(whole: str | None, pairs: list[str]) -> dict[str, str | Any]:
    """The ``--json`` object with the ``KEY=VALUE`` pairs over it (values are converted later)."""
    arguments: dict[str, Any] = {}
    if whole is not None:
        try:
            arguments = json.loads(whole)
        except ValueError as exc:
            raise _Fatal(f"--json is not valid JSON: {exc}") from None
        if not isinstance(arguments, dict):
            raise _Fatal(f"--json takes a JSON object, not {type(arguments).__name__}")
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise _Fatal(f"tool arguments are KEY=VALUE, not {pair!r}")
        arguments[key] = _Raw(value)
    return arguments


class _Raw(str):
    """A ``KEY=VALUE`` value as typed, converted once the tool's schema is known."""


def convert(value: str, schema: Any) -> Any:
    """A command-line value for a property of ``schema``: a string where the
    schema asks only for a string, else its JSON value when it parses as JSON,
    else the string itself."""
    types = schema.get("type") if isinstance(schema, dict) else None
    text = str(value)
    if types == "string" or types == ["string"]:
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


# ------------------------------------------------------------- the connection


class _Connection:
    """Where to connect and how."""

    def __init__(self, target: str | list[str], headers: dict[str, str], timeout: float) -> None:
        if timeout <= 0:
            raise _Fatal("--timeout must be positive")
        self.timeout = timeout
        self.headers = headers
        self.url: str | None = None
        self.argv: list[str] = []
        if isinstance(target, str) and target.split(":", 1)[0].lower() in ("http", "https", "ws", "wss"):
            self.url = target
        else:
            self.argv = shlex.split(target) if isinstance(target, str) else target
            if not self.argv:
                raise _Fatal("the TARGET command is empty")
            if headers:
                raise _Fatal("--header applies to URL targets only, not to a command")
        self.shown = self.url or shlex.join(self.argv)

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Any]:
        """The connected :class:`~mcp_trio.client.Client`; failures to connect become :class:`_Fatal`."""
        from ..client import connect, open_client
        from ..transports.stdio import open_stdio_client
        from ..transports.websocket import WebSocketConnectError

        options: dict[str, Any] = {"name": "mcp-trio-cli", "version": __version__}
        options["connect_timeout"] = self.timeout
        async with AsyncExitStack() as stack:
            if self.url is not None:
                if self.headers:
                    key = "websocket_options" if self.url.lower().startswith("ws") else "http_options"
                    options[key] = {"headers": self.headers}
                try:
                    client = await stack.enter_async_context(connect(self.url, **options))
                except (McpError, ConnectionClosed, WebSocketConnectError, OSError, ValueError) as exc:
                    raise _Fatal(_unreachable(self.url, _reason(exc))) from None
            else:
                try:
                    process = await stack.enter_async_context(open_stdio_client(self.argv))
                except OSError as exc:
                    problem = f"{exc.strerror}: {self.argv[0]!r}" if exc.strerror else str(exc)
                    if self.argv[0].endswith(".py"):
                        problem += f" (to run a Python file: 'python {self.shown}')"
                    raise _Fatal(f"cannot start {self.shown!r}: {problem}") from None
                try:
                    client = await stack.enter_async_context(open_client(process.channel, **options))
                except (McpError, ConnectionClosed) as exc:
                    with trio.move_on_after(2):
                        await process.process.wait()
                    code = process.process.returncode
                    if code is None:
                        raise _Fatal(f"cannot start {self.shown!r}: {_reason(exc)}") from None
                    raise _Fatal(
                        f"cannot start {self.shown!r}: exited with code {code} before initialize"
                    ) from None
            yield client


def _unreachable(url: str, reason: str) -> str:
    return f"{url}: {reason}" if reason.startswith("cannot connect") else f"cannot connect to {url}: {reason}"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, McpError):
        return exc.message
    return str(exc) or type(exc).__name__


def _is_transport_failure(exc: McpError) -> bool:
    return isinstance(exc.data, dict) and "transport" in exc.data


async def _main(name: str, connection: _Connection, run: Callable[[Any], Any], as_json: bool) -> int:
    def fail(message: str, code: int = _EXIT_USAGE) -> int:
        print(f"mcp-trio {name}: {message}", file=sys.stderr)
        return code

    try:
        with trio.fail_after(connection.timeout):
            async with connection.open() as client:
                result = await run(client)
                if name == "call":
                    return int(result)
                print(_visible(_render(result), keep="\n") if not as_json else _dumps(result))
                return 0
    except _Fatal as exc:
        return fail(str(exc))
    except trio.TooSlowError:
        return fail(f"{connection.shown}: no answer within {connection.timeout:g} s (--timeout)")
    except ConnectionClosed as exc:
        return fail(f"{connection.shown}: the connection closed: {exc}")
    except McpError as exc:
        if _is_transport_failure(exc):
            return fail(f"{connection.shown}: {exc.message}")
        return fail(f"the server answered with error {exc.code}: {_visible(exc.message)}", _EXIT_FAILED)
    except RemoteProtocolError as exc:
        return fail(f"the server's answer is invalid: {exc}", _EXIT_FAILED)


def _dumps(value: Any) -> str:
    return _visible(json.dumps(msgspec.to_builtins(value), indent=2, ensure_ascii=False), keep="\n")


#: What a server's text must not send to a terminal as it is: control characters (C0 but for
#: newline and tab, DEL, C1: escape sequences that set the clipboard, clear the screen, retitle
#: the window ...) and the format characters that reorder text (bidirectional overrides).
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(text: str, keep: str = "") -> str:
    """``text`` with every character in :data:`_HIDDEN` written as a ``\\uXXXX`` escape (also
    valid inside a JSON string), newlines kept where ``keep`` says."""
    return _HIDDEN.sub(lambda m: m[0] if m[0] in keep else f"\\u{ord(m[0]):04x}", text)


# ----------------------------------------------------------------- the commands


async def _list(client: Any, *, max_items: int = DEFAULT_MAX_ITEMS) -> dict[str, Any]:
    capabilities = client.server_capabilities
    listing: dict[str, Any] = {}
    kinds = {
        "tools": ("tools", client.list_tools),
        "resources": ("resources", client.list_resources),
        "resourceTemplates": ("resources", client.list_resource_templates),
        "prompts": ("prompts", client.list_prompts),
    }
    for key, (capability, list_page) in kinds.items():
        if capability in capabilities:
            listing[key] = await _pages(list_page, key, max_items)
    return listing


async def _pages(list_page: Callable[..., Any], key: str, max_items: int) -> list[Any]:
    """The items of every page, up to ``max_items`` (a server's pages need not end: the rest is
    left, and stderr says so)."""
    items: list[Any] = []
    cursor: str | None = None
    while True:
        page = await list_page(cursor)
        items.extend(getattr(page, key))
        cursor = page.nextCursor if isinstance(page.nextCursor, str) else None
        if len(items) > max_items or (cursor is not None and len(items) == max_items):
            print(
                f"mcp-trio list: more {key} than {max_items}: the first {max_items} shown (--max-items)",
                file=sys.stderr,
            )
            return items[:max_items]
        if cursor is None:
            return items


async def _inspect(client: Any) -> dict[str, Any]:
    return {
        "serverInfo": client.server_info,
        "protocolVersion": client.protocol_version,
        "capabilities": client.server_capabilities,
        "instructions": client.instructions,
    }


def _call_runner(tool: str, given: dict[str, Any]) -> Callable[[Any], Any]:
    async def call(client: Any) -> int:
        schema: Any = {}
        if "tools" in client.server_capabilities:  # the schemas: to convert arguments, check the result
            schema = await _input_schema(client, tool)
        properties = schema.get("properties") if isinstance(schema, dict) else None
        properties = properties if isinstance(properties, dict) else {}
        arguments = {
            key: convert(value, properties.get(key)) if isinstance(value, _Raw) else value
            for key, value in given.items()
        }
        try:
            result = await client.call_tool(tool, arguments)
        except RemoteProtocolError as exc:
            kept = getattr(exc, "result", None)  # an OutputValidationError holds the result
            if kept is not None:
                print(_dumps(kept))
            raise
        except McpError as exc:
            if not _is_transport_failure(exc):
                error = {"code": exc.code, "message": exc.message}
                if exc.data is not None:
                    error["data"] = exc.data
                print(_visible(json.dumps({"error": error}, indent=2, ensure_ascii=False), keep="\n"))
            raise
        print(_dumps(result))
        if result.isError:
            print(f"mcp-trio call: the tool {tool!r} reported an error (isError)", file=sys.stderr)
            return _EXIT_FAILED
        return 0

    return call


async def _input_schema(client: Any, tool: str) -> Any:
    """The input schema of ``tool``, looked for in the first ``DEFAULT_MAX_ITEMS`` tools listed
    (a server's pages need not end); ``{}`` if it is not among them."""
    seen = 0
    cursor: str | None = None
    while seen < DEFAULT_MAX_ITEMS:
        page = await client.list_tools(cursor)
        for listed in page.tools:
            if listed.name == tool:
                return listed.inputSchema
        seen += len(page.tools)
        cursor = page.nextCursor if isinstance(page.nextCursor, str) else None
        if cursor is None:
            break
    return {}


# ----------------------------------------------------------------- text output


def _first_line(text: str | None) -> str:
    return (text or "").strip().split("\n", 1)[0]


def _entry(head: str, description: str | None) -> str:
    """One line of ``list``: what a server sent is shown, never acted on by the terminal (a
    newline in a name included)."""
    line = _visible(_first_line(description) if isinstance(description, str) else "")
    return f"  {_visible(head)}" + (f"  - {line}" if line else "")


def _tool_arguments(schema: Any) -> str:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not properties:
        return ""
    required = schema.get("required") or []
    shown = []
    for key, spec in properties.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if isinstance(kind, list):
            kind = "|".join(k for k in kind if isinstance(k, str))
        kind = kind if isinstance(kind, str) else None  # (a schema that is not JSON Schema: no type shown)
        optional = "" if isinstance(required, list) and key in required else "?"
        shown.append(f"{key}{optional}{': ' + kind if kind else ''}")
    return "(" + ", ".join(shown) + ")"


def _render(result: dict[str, Any]) -> str:
    if "serverInfo" in result:
        return _render_inspect(result)
    sections: list[str] = []
    lines: dict[str, Callable[[Any], str]] = {
        "tools": lambda t: _entry(t.name + _tool_arguments(t.inputSchema), t.description),
        "resources": lambda r: _entry(
            f"{r.uri}  {r.name}" + (f" ({r.mimeType})" if r.mimeType else ""), r.description
        ),
        "resourceTemplates": lambda r: _entry(f"{r.uriTemplate}  {r.name}", r.description),
        "prompts": lambda p: _entry(
            p.name + "(" + ", ".join(a.name + ("" if a.required else "?") for a in p.arguments) + ")",
            p.description,
        ),
    }
    titles = {"tools": "Tools", "resources": "Resources", "resourceTemplates": "Resource templates"}
    for key, line in lines.items():
        if key not in result:
            continue
        items = result[key]
        sections.append(f"{titles.get(key, 'Prompts')} ({len(items)}):")
        sections.extend(line(item) for item in items)
    return "\n".join(sections) if sections else "The server offers no tools, resources or prompts."


def _render_inspect(result: dict[str, Any]) -> str:
    info = result["serverInfo"]
    name = _visible(str(info.get("title") or info.get("name", "?")))
    lines = [
        f"Server: {name} {_visible(str(info.get('version', '')))}".rstrip(),
        f"Protocol revision: {result['protocolVersion']}",
        "Capabilities:",
    ]
    for key, value in sorted(result["capabilities"].items()):
        details = (
            ", ".join(f"{k}={json.dumps(v)}" for k, v in value.items()) if isinstance(value, dict) else ""
        )
        lines.append(f"  {_visible(key)}" + (f" ({_visible(details)})" if details else ""))
    instructions = _visible(result["instructions"] or "", keep="\n")
    lines.append(
        "Instructions:" + ("\n  " + instructions.strip().replace("\n", "\n  ") if instructions else " none")
    )
    return "\n".join(lines)
