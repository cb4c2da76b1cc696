"""The 2026-07-28 era: no sessions on the server, and multi-round-trip requests, seen from the
low-level session API. Two servers share a state key, as processes behind a load balancer would."""

import secrets

import trio

from mcp_trio import McpError, open_memory_transport_pair, open_session
from mcp_trio.server import Context, Server

# One key for every process serving the endpoint (in production, from their configuration)
KEY = secrets.token_bytes(32)
SEATS = {"type": "object", "properties": {"seats": {"type": "integer"}}, "required": ["seats"]}
runs = []


def make_server(name: str, key: bytes) -> Server:
    server = Server(name, "1.0", state_key=key)

    @server.tool
    async def book(restaurant: str, ctx: Context) -> str:
        """Book a table: asks the user how many seats."""
        runs.append(name)  # code before a question may run once per round
        answer = await ctx.elicit(f"How many seats at {restaurant}?", SEATS)
        return f"{name} booked {answer.content['seats']} seats at {restaurant}"

    return server


async def call(server: Server, params: dict):
    """One tools/call against one server, as if each request went to another process."""
    server_end, client_end = open_memory_transport_pair()
    error = None
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.serve_session, server_end)
        async with open_session(
            client_end,
            role="client",
            info={"name": "raw", "version": "1"},
            capabilities={"elicitation": {"form": {}}},
            versions=["2026-07-28"],
        ) as session:
            await session.connect()
            try:
                result = await session.request("tools/call", params)
            except McpError as exc:
                error = exc  # raised below, outside the nursery (not in an exception group)
    if error is not None:
        raise error
    return result


async def main() -> None:
    first, second = make_server("A", KEY), make_server("B", KEY)
    params = {"name": "book", "arguments": {"restaurant": "Chez Trio"}}

    round1 = await call(first, params)
    print(type(round1).__name__, round1.resultType)
    ((key, ask),) = round1.inputRequests.items()
    print("asks:", type(ask).__name__, repr(ask.params.message))
    print("requestState: opaque to the client, signed by the server:", bool(round1.requestState))

    # the answer goes with the state to another server: it needs no memory of round 1
    answer = {"action": "accept", "content": {"seats": 4}}
    retry = {**params, "inputResponses": {key: answer}, "requestState": round1.requestState}
    round2 = await call(second, retry)
    print(type(round2).__name__, round2.content[0].text)
    print("the tool ran on:", runs)

    try:
        await call(make_server("C", secrets.token_bytes(32)), retry)
    except McpError as exc:
        print("a server with another key refuses it:", exc.code, exc.message)


trio.run(main)
