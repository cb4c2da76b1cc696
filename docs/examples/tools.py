"""Tools: typed arguments, validation, structured output, errors, images, sync and async."""

import hashlib
import json
from dataclasses import dataclass
from typing import Annotated

import msgspec
import trio

from mcp_trio import McpError, open_memory_transport_pair
from mcp_trio.client import open_client
from mcp_trio.server import Audio, Image, Server

server = Server("tools-demo", "1.0")


@dataclass
class Forecast:
    city: str
    celsius: float
    summary: str


@server.tool
async def forecast(
    city: str,
    days: Annotated[int, msgspec.Meta(ge=1, le=7, description="How far ahead")] = 1,
) -> Forecast:
    """The weather in a city.

    Args:
        city: The city's name.
    """
    return Forecast(city=city, celsius=21.5 - days, summary="sunny")


@server.tool(on_loop=True)
def shout(text: str) -> str:
    """Upper-case a text (quick: it stays on the event loop)."""
    return text.upper()


@server.tool
def checksum(text: str) -> str:
    """A plain function runs in a worker thread, so other requests go on meanwhile."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@server.tool
async def divide(a: float, b: float) -> float:
    """a / b."""
    return a / b  # an exception becomes a tool error the model can read


@server.tool
async def admin_only() -> str:
    """Refused with a JSON-RPC error rather than a tool error."""
    raise McpError(-32001, "not allowed")


@server.tool(structured_output=False)  # content blocks, not data
async def pixel() -> list:
    """A caption and a 1x1 PNG."""
    png = bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d4944415478da63f8cfc0f01f0005000201e2a9cc460000000049454e44ae426082"
    )
    return [{"type": "text", "text": "one red pixel"}, Image(png, "image/png")]


@server.tool
async def beep() -> Audio:
    """A short sound: Audio (like Image) takes the bytes and a MIME type."""
    return Audio(b"RIFF....WAVEfmt ", "audio/wav")


async def main() -> None:
    server_end, client_end = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, server_end)
        async with open_client(client_end) as client:
            tools = {tool.name: tool for tool in await client.list_all_tools()}
            print("input schema:", json.dumps(tools["forecast"].inputSchema, sort_keys=True))
            print("output schema:", json.dumps(tools["forecast"].outputSchema, sort_keys=True))

            result = await client.call_tool("forecast", {"city": "Oslo", "days": 3})
            print("structured:", result.structuredContent)
            print("as text:", result.content[0].text)

            result = await client.call_tool("forecast", {"city": "Oslo", "days": 9})
            print("invalid:", result.isError, result.content[0].text)

            print("sync:", (await client.call_tool("shout", {"text": "hi"})).content[0].text)
            print("thread:", (await client.call_tool("checksum", {"text": "hi"})).content[0].text)

            result = await client.call_tool("divide", {"a": 1, "b": 0})
            print("raised:", result.isError, result.content[0].text)

            try:
                await client.call_tool("admin_only")
            except McpError as exc:
                print("McpError:", exc.code, exc.message)

            result = await client.call_tool("pixel")
            text, image = result.content
            print("content:", text.text, "+", type(image).__name__, image.mimeType)
            (sound,) = (await client.call_tool("beep")).content
            print("content:", type(sound).__name__, sound.mimeType, sound.data)


trio.run(main)
