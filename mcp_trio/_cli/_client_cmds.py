"""mcp-trio list, call, inspect, read and prompt: poke any MCP server from the command line.

TARGET is a command line to start as a stdio server (one argument, split like
a shell would: ``"python server.py"``; or everything after ``--``), an
``http(s)://`` URL (Streamable HTTP) or a ``ws(s)://`` URL (WebSocket).
``--cacert FILE`` trusts a CA bundle for an ``https://`` or ``wss://`` URL,
``--insecure`` verifies no certificate (with a warning).

At a terminal, ``call`` shows the progress the server reports on one updating
line of stderr, and ``call``, ``read`` and ``prompt`` declare elicitation and
ask the user when the server asks (see :mod:`._terminal`).

Exit codes (for scripts):

* 0: success;
* 1: the server answered with a failure: a tool result with ``isError``, or
  a JSON-RPC error reply (an unknown tool, invalid arguments ...), or an
  invalid answer (a ``structuredContent`` that does not match the tool's
  ``outputSchema`` ...);
* 2: a usage error, the target cannot be started or reached, the connection
  broke, or ``--timeout`` passed.

Errors are one line on stderr naming the problem; results go to stdout
(``call`` always prints JSON; the others print text, or JSON with ``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from .._exceptions import ConnectionClosed, McpError, RemoteProtocolError
from ._client_conn import (
    Connection,
    Fatal,
    dumps,
    is_transport_failure,
    tls_context,
    visible,
    warn_insecure,
)
from ._client_read import prompt_runner, read_runner
from ._terminal import ProgressLine, TerminalForm

if TYPE_CHECKING:
    from ..client import Client

__all__ = ["COMMANDS", "add_parsers", "command"]

COMMANDS = ("list", "call", "inspect", "read", "prompt")
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_ITEMS = 10_000  # of each kind ``list`` shows: a server's pages need not end
_EXIT_FAILED = 1  # the server answered with a failure
_EXIT_USAGE = 2  # usage, connection, start-up or timeout

Runner = Callable[["Client"], Awaitable[int]]

# ----------------------------------------------------------------- the parser

_HELPS = {
    "list": "list the tools, resources, resource templates and prompts of a server",
    "call": "call a tool and print its result as JSON",
    "inspect": "show a server's info, negotiated revision, capabilities and instructions",
    "read": "read a resource and print its contents",
    "prompt": "get a prompt and print its messages",
}
_OPERANDS = {"call": "TOOL [KEY=VALUE ...] ", "read": "URI ", "prompt": "NAME [KEY=VALUE ...] "}


def _parser(name: str) -> argparse.ArgumentParser:
    operands = _OPERANDS.get(name, "")
    p = argparse.ArgumentParser(
        prog=f"mcp-trio {name}",
        description=_HELPS[name] + ".  TARGET is a command line (one argument, or everything after "
        "'--'), an http(s):// URL (Streamable HTTP) or a ws(s):// URL (WebSocket).  Exit codes: 0 "
        "success, 1 the server answered with a failure (isError, JSON-RPC error), 2 usage error, "
        "cannot start or reach the target, or timeout.",
        usage=f"mcp-trio {name} [options] TARGET {operands}\n"
        f"       mcp-trio {name} [options] {operands}-- COMMAND [ARG ...]",
    )
    p.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    p.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"seconds allowed for the whole command, connecting included, the time taken to "
        f"answer the server's questions excepted (default: {DEFAULT_TIMEOUT:g})",
    )
    p.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an HTTP header for every request to a URL target (repeatable), "
        "e.g. --header 'Authorization: Bearer TOKEN'",
    )
    p.add_argument(
        "--cacert",
        metavar="FILE",
        help="trust the CA certificates in FILE (PEM) for an https:// or wss:// target",
    )
    p.add_argument(
        "--insecure",
        action="store_true",
        help="do not verify the TLS certificate of an https:// or wss:// target (a warning says so)",
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
    if name == "read":
        p.add_argument("--output", metavar="FILE", help="write the contents' bytes to FILE")
    return p


def add_parsers(sub: Any) -> None:
    """List the client commands in the main parser's help (``command`` parses them)."""
    for name in COMMANDS:
        sub.add_parser(name, help=_HELPS[name], add_help=False)


def command(argv: Sequence[str]) -> int:
    """Run ``mcp-trio list|call|inspect|read|prompt ...`` (``argv`` starts with the command's name)."""
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
                raise Fatal("give a TARGET: a command line, an http(s):// URL or a ws(s):// URL")
            target: str | list[str] = rest.pop(0)
        else:
            if not spawn:
                raise Fatal("give the command to start after '--'")
            target = spawn
        run = _runner(name, args, rest)
        tls = tls_context(args.cacert, args.insecure)
        flag = "--insecure" if args.insecure else "--cacert"
        connection = Connection(target, _headers(args.header), args.timeout, tls, flag)
    except Fatal as exc:
        parser.print_usage(sys.stderr)
        print(f"mcp-trio {name}: {exc}", file=sys.stderr)
        return _EXIT_USAGE
    if args.insecure:
        warn_insecure(name)
    interactive = name in ("call", "read", "prompt") and sys.stdin.isatty()
    try:
        return trio.run(_main, name, connection, run, interactive)
    except KeyboardInterrupt:
        print(f"mcp-trio {name}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (``| head``): no traceback, and none at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return _EXIT_FAILED


def _runner(name: str, args: argparse.Namespace, rest: list[str]) -> Runner:
    """What the command does once connected (its operands checked)."""
    if name == "call":
        if not rest:
            raise Fatal("give the name of the tool to call")
        return _call_runner(rest[0], _arguments(args.arguments, rest[1:]), sys.stderr.isatty())
    if name in ("read", "prompt"):
        if not rest:
            raise Fatal(
                "give the URI of the resource to read" if name == "read" else "give the prompt's name"
            )
        if name == "read":
            if len(rest) > 1:
                raise Fatal(f"unexpected arguments: {' '.join(rest[1:])}")
            return read_runner(rest[0], args.json, args.output)
        pairs = {key: str(value) for key, value in _arguments(None, rest[1:], "prompt").items()}
        return prompt_runner(rest[0], pairs, args.json)
    if rest:
        raise Fatal(f"unexpected arguments: {' '.join(rest)}")
    if name == "list":
        return partial(_printed, partial(_list, max_items=args.max_items), args.json)
    return partial(_printed, _inspect, args.json)


def _headers(given: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in given:
        key, sep, value = line.partition(":")
        if not sep or not key.strip() or key != key.strip():
            raise Fatal(f"--header takes 'NAME: VALUE', not {line!r}")
        headers[key] = value.strip()
    return headers


def _arguments(whole: str | None, pairs: list[str], what: str = "tool") -> dict[str, str | Any]:
    """The ``--json`` object with the ``KEY=VALUE`` pairs over it (values are converted later)."""
    arguments: dict[str, Any] = {}
    if whole is not None:
        try:
            arguments = json.loads(whole)
        except ValueError as exc:
            raise Fatal(f"--json is not valid JSON: {exc}") from None
        if not isinstance(arguments, dict):
            raise Fatal(f"--json takes a JSON object, not {type(arguments).__name__}")
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise Fatal(f"{what} arguments are KEY=VALUE, not {pair!r}")
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


# ------------------------------------------------------------- running one


async def _main(name: str, connection: Connection, run: Runner, interactive: bool) -> int:
    def fail(message: str, code: int = _EXIT_USAGE) -> int:
        print(f"mcp-trio {name}: {message}", file=sys.stderr)
        return code

    try:
        with trio.fail_after(connection.timeout) as deadline:
            form = TerminalForm(sys.stdin, sys.stderr, deadline) if interactive else None
            async with connection.open(elicitation=form) as client:
                return await run(client)
    except Fatal as exc:
        return fail(str(exc))
    except trio.TooSlowError:
        return fail(f"{connection.shown}: no answer within {connection.timeout:g} s (--timeout)")
    except ConnectionClosed as exc:
        return fail(f"{connection.shown}: the connection closed: {exc}")
    except McpError as exc:
        if is_transport_failure(exc):
            return fail(f"{connection.shown}: {exc.message}")
        return fail(f"the server answered with error {exc.code}: {visible(exc.message)}", _EXIT_FAILED)
    except RemoteProtocolError as exc:
        return fail(f"the server's answer is invalid: {exc}", _EXIT_FAILED)


async def _printed(run: Callable[[Client], Awaitable[dict[str, Any]]], as_json: bool, client: Client) -> int:
    result = await run(client)
    print(visible(_render(result), keep="\n") if not as_json else dumps(result))
    return 0


# ----------------------------------------------------------------- the commands


async def _list(client: Client, *, max_items: int = DEFAULT_MAX_ITEMS) -> dict[str, Any]:
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


async def _inspect(client: Client) -> dict[str, Any]:
    return {
        "serverInfo": client.server_info,
        "protocolVersion": client.protocol_version,
        "capabilities": client.server_capabilities,
        "instructions": client.instructions,
    }


def _call_runner(tool: str, given: dict[str, Any], progress: bool) -> Runner:
    """The call; with ``progress`` (stderr is a terminal) a progress token is sent and the
    server's progress shown on one updating line of stderr."""

    async def call(client: Client) -> int:
        schema: Any = {}
        if "tools" in client.server_capabilities:  # the schemas: to convert arguments, check the result
            schema = await _input_schema(client, tool)
        properties = schema.get("properties") if isinstance(schema, dict) else None
        properties = properties if isinstance(properties, dict) else {}
        arguments = {
            key: convert(value, properties.get(key)) if isinstance(value, _Raw) else value
            for key, value in given.items()
        }
        line = ProgressLine(sys.stderr) if progress else None
        try:
            result = await client.call_tool(tool, arguments, on_progress=line)
        except RemoteProtocolError as exc:
            kept = getattr(exc, "result", None)  # an OutputValidationError holds the result
            if kept is not None:
                print(dumps(kept))
            raise
        except McpError as exc:
            if not is_transport_failure(exc):
                error = {"code": exc.code, "message": exc.message}
                if exc.data is not None:
                    error["data"] = exc.data
                print(visible(json.dumps({"error": error}, indent=2, ensure_ascii=False), keep="\n"))
            raise
        finally:
            if line is not None:
                line.finish()
        print(dumps(result))
        if result.isError:
            print(f"mcp-trio call: the tool {tool!r} reported an error (isError)", file=sys.stderr)
            return _EXIT_FAILED
        return 0

    return call


async def _input_schema(client: Client, tool: str) -> Any:
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
    line = visible(_first_line(description) if isinstance(description, str) else "")
    return f"  {visible(head)}" + (f"  - {line}" if line else "")


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
    name = visible(str(info.get("title") or info.get("name", "?")))
    lines = [
        f"Server: {name} {visible(str(info.get('version', '')))}".rstrip(),
        f"Protocol revision: {result['protocolVersion']}",
        "Capabilities:",
    ]
    for key, value in sorted(result["capabilities"].items()):
        details = (
            ", ".join(f"{k}={json.dumps(v)}" for k, v in value.items()) if isinstance(value, dict) else ""
        )
        lines.append(f"  {visible(key)}" + (f" ({visible(details)})" if details else ""))
    instructions = visible(result["instructions"] or "", keep="\n")
    lines.append(
        "Instructions:" + ("\n  " + instructions.strip().replace("\n", "\n  ") if instructions else " none")
    )
    return "\n".join(lines)
