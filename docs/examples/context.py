"""What a handler can ask of the client: logging, sampling, elicitation (form and URL), roots.

The same client runs against the same server twice: in 2025-11-25, where each ask is a request
to the client, and in 2026-07-28, where it is a multi-round-trip result the client answers by
calling again. The handlers and the output are the same.
"""

import trio

from mcp_trio import open_memory_transport_pair
from mcp_trio.client import open_client
from mcp_trio.server import Context, Server

server = Server("context-demo", "1.0")
SEATS = {"type": "object", "properties": {"seats": {"type": "integer", "minimum": 1}}, "required": ["seats"]}


@server.tool
async def chatty(ctx: Context) -> str:
    """Logs at three levels; the client's threshold filters them."""
    await ctx.debug("not sent: below the client's level")
    await ctx.info({"step": "started"})
    await ctx.log("warning", "disk almost full", logger="storage")
    return "logged"


@server.tool
async def summarize(text: str, ctx: Context) -> str:
    """Asks the client's language model."""
    answer = await ctx.sample(
        f"Summarize in three words: {text}", max_tokens=20, systemPrompt="You are terse."
    )
    return f"{answer.model} says: {answer.content.text}"


@server.tool
async def book_table(ctx: Context) -> str:
    """Asks the user for structured input (form mode)."""
    answer = await ctx.elicit("How many seats?", SEATS)
    if answer.action != "accept":
        return f"no booking ({answer.action})"
    return f"booked {answer.content['seats']} seats"


@server.tool
async def link_account(ctx: Context) -> str:
    """Sends the user to a URL, for what must not pass through the client (URL mode)."""
    answer = await ctx.elicit_url("Sign in to the calendar", "https://calendar.example/connect")
    return f"sign-in: {answer.action}"


@server.tool
async def workspace(ctx: Context) -> str:
    """Asks the client for its roots."""
    roots = await ctx.list_roots()
    return ", ".join(root.uri for root in roots.roots)


# --- the client's side: a handler per kind of question ---------------------------------------


async def sampling(params):
    question = params.messages[0].content.text
    return {
        "role": "assistant",
        "model": "tiny-llm",
        "content": {"type": "text", "text": f"{len(question.split())} words, understood"},
    }


async def elicitation(params):
    if params.mode == "url":
        print("  (the user would open", params.url + ")")
        return {"action": "accept"}
    return {"action": "accept", "content": {"seats": 4}}


async def on_log(params):
    source = "" if params.logger is None else f" ({params.logger})"
    print(f"  log {params.level}{source}: {params.data}")


async def main() -> None:
    for version in ["2025-11-25", "2026-07-28"]:
        print(version)
        server_end, client_end = open_memory_transport_pair()
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve_session, server_end)
            async with open_client(
                client_end,
                versions=[version],
                sampling=sampling,
                elicitation=elicitation,
                elicitation_modes=["form", "url"],
                roots=[{"uri": "file:///home/ada/project", "name": "project"}],
                on_log=on_log,
            ) as client:
                await client.set_log_level("info")
                for name, arguments in [
                    ("chatty", {}),
                    ("summarize", {"text": "a long story"}),
                    ("book_table", {}),
                    ("link_account", {}),
                    ("workspace", {}),
                ]:
                    result = await client.call_tool(name, arguments)
                    print(f"  {name}: {result.content[0].text}")


trio.run(main)
