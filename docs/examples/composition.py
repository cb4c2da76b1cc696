"""One server made of others: a weather server mounted live under "weather", a notes server
imported once under "notes".

The mounted server keeps its own lifespan (entered inside the app's, left before it) and its
handlers log to the app's client; a tool it registers later appears at once, while what the
notes server registers after the import does not.
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from mcp_trio.client import connect_server
from mcp_trio.server import Context, Server


def lifespan(what: str) -> Any:
    @asynccontextmanager
    async def opened(server: Server) -> AsyncIterator[str]:
        print(f"{server.info['name']}: open {what}")
        yield what
        print(f"{server.info['name']}: close {what}")

    return opened


weather = Server("weather", "1.0", lifespan=lifespan("the forecast feed"))


@weather.tool
async def forecast(city: str, ctx: Context) -> str:
    """Tomorrow's weather in a city."""
    await ctx.info(f"asking {ctx.lifespan_value(str)} about {city}")
    return f"{city}: sunny"


@weather.resource("weather://cities/{city}", mime_type="text/plain")
def city(city: str) -> str:
    return f"{city}: 18 degrees"


notes = Server("notes", "1.0")


@notes.tool
def count_notes() -> int:
    return 2


@notes.resource("notes://today", mime_type="text/plain")
def today() -> str:
    return "buy tea"


app = Server("app", "1.0", lifespan=lifespan("the app's database"))
app.mount(weather, prefix="weather")  # live
app.import_server(notes, prefix="notes")  # copied now


logged = trio.Event()


async def show_log(params: Any) -> None:
    print(f"  log: {params.data}")
    logged.set()


async def main() -> None:
    async with connect_server(app, on_log=show_log) as client:
        await client.set_log_level("info")
        print("tools:", [t.name for t in await client.list_all_tools()])
        print("resources:", [r.uri for r in await client.list_all_resources()])
        print("templates:", [t.uriTemplate for t in await client.list_all_resource_templates()])
        result = await client.call_tool("weather_forecast", {"city": "Oslo"})
        await logged.wait()  # (the client's log handler runs on its own)
        print(result.text)
        print((await client.read_resource("weather://weather/cities/Lima")).contents[0].text)  # type: ignore[union-attr]
        print((await client.read_resource("notes://notes/today")).contents[0].text)  # type: ignore[union-attr]

        weather.tool(lambda: "no storms", name="warnings")  # registered after the mount: served
        notes.tool(lambda: 0, name="archive")  # registered after the import: not served
        print("tools now:", [t.name for t in await client.list_all_tools()])


trio.run(main)
