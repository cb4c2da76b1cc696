"""Options in the wrong place: a TypeError that says where they belong, before anything starts."""

import trio

from mcp_trio import open_memory_transport_pair
from mcp_trio.client import connect, connect_http, open_client
from mcp_trio.server import Server

server = Server("options-demo", "1.0")


async def main() -> None:
    mistakes = [
        lambda: connect("https://mcp.example.com/mcp", ssl_context=None),  # belongs in http_options
        lambda: connect(server, env={"DEBUG": "1"}),  # an option of a command to start
        lambda: connect(server, timeout=5),  # the client's are default_timeout, connect_timeout
    ]
    for mistake in mistakes:
        try:
            mistake()
        except TypeError as exc:
            print(exc)

    async def opened(opening) -> None:
        try:
            async with opening:
                pass
        except TypeError as exc:
            print(exc)

    await opened(connect_http("https://mcp.example.com/mcp", http_options={"default_timeout": 5}))
    channel, _ = open_memory_transport_pair()
    await opened(open_client(channel, default_timeot=5))

    async with connect(server, default_timeout=5, connect_timeout=2) as client:  # right
        print("connected to", client.server_info["name"])


trio.run(main)
