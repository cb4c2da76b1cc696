"""mcp-trio read and prompt: a resource's contents and a prompt's messages, readable at a
terminal (``--json``: the result as the server sent it)."""

from __future__ import annotations

import base64
import binascii
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import trio

from ._client_conn import Fatal, dumps, visible

if TYPE_CHECKING:
    from ..client import Client
    from ..client.results import ContentBlock, ResourceContents

__all__ = ["prompt_runner", "read_runner"]

Runner = Callable[["Client"], Awaitable[int]]


def read_runner(uri: str, as_json: bool, output: str | None) -> Runner:
    async def read(client: Client) -> int:
        result = await client.read_resource(uri)
        if output is not None:
            if len(result.contents) != 1:
                raise Fatal(f"{uri} has {len(result.contents)} contents: --output writes one")
            data = _bytes(result.contents[0])
            try:
                await trio.Path(output).write_bytes(data)
            except OSError as exc:
                raise Fatal(f"--output: cannot write {output}: {exc.strerror or exc}") from None
            print(f"mcp-trio read: {len(data)} bytes written to {output}", file=sys.stderr)
        elif as_json:
            print(dumps(result))
        else:
            print(render_contents(result.contents))
        return 0

    return read


def _bytes(contents: ResourceContents) -> bytes:
    from ..client.results import TextResourceContents

    if isinstance(contents, TextResourceContents):
        return contents.text.encode()
    try:
        return base64.b64decode(contents.blob, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise Fatal(f"the server's blob for {contents.uri} is not valid base64: {exc}") from None


def _size(blob: str) -> str:
    try:
        return f"{len(base64.b64decode(blob, validate=True))} bytes"
    except (binascii.Error, ValueError):
        return "not valid base64"


def render_contents(contents: list[ResourceContents]) -> str:
    """Texts as they are; a blob as one line saying its size and type (``--output`` writes it).
    With several contents, each is headed by its URI."""
    from ..client.results import TextResourceContents

    parts: list[str] = []
    for item in contents:
        mime = f" ({visible(item.mimeType)})" if item.mimeType else ""
        if isinstance(item, TextResourceContents):
            body = visible(item.text, keep="\n\t")
        else:
            body = f"[binary: {_size(item.blob)}{mime}; --output FILE writes it]"
        parts.append(body if len(contents) == 1 else f"--- {visible(item.uri)}{mime}\n{body}")
    return "\n".join(parts) if parts else "(no contents)"


def prompt_runner(name: str, arguments: dict[str, str], as_json: bool) -> Runner:
    async def get(client: Client) -> int:
        result = await client.get_prompt(name, arguments)
        if as_json:
            print(dumps(result))
            return 0
        lines = [f"Description: {visible(result.description)}", ""] if result.description else []
        for message in result.messages:
            lines.append(f"[{message.role}]")
            lines.append(render_block(message.content))
            lines.append("")
        print("\n".join(lines).rstrip("\n") if lines else "(no messages)")
        return 0

    return get


def render_block(block: ContentBlock) -> str:
    """A content block as text: a text as it is, anything else as one line saying what it is."""
    from ..client.results import (
        AudioContent,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextContent,
        TextResourceContents,
    )

    if isinstance(block, TextContent):
        return visible(block.text, keep="\n\t")
    if isinstance(block, ImageContent | AudioContent):
        return f"[{block.type}: {_size(block.data)}, {visible(block.mimeType)}]"
    if isinstance(block, EmbeddedResource):
        inner = block.resource
        if isinstance(inner, TextResourceContents):
            return f"[resource {visible(inner.uri)}]\n{visible(inner.text, keep=chr(10) + chr(9))}"
        mime = f", {visible(inner.mimeType)}" if inner.mimeType else ""
        return f"[resource {visible(inner.uri)}: {_size(inner.blob)}{mime}]"
    if isinstance(block, ResourceLink):
        return f"[link: {visible(block.uri)}  {visible(block.name)}]"
    return f"[{visible(block.type)} content]"
