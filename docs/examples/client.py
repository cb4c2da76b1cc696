"""The client: paging, every kind of call, notifications, and the 2026-07-28 result cache."""

import trio

from mcp_trio import open_memory_transport_pair
from mcp_trio.client import ResultCache, open_client
from mcp_trio.server import Server

# cache_ttl_ms: lists and reads may be reused for a minute (2026-07-28 ttlMs)
server = Server(
    "client-demo", "1.0", page_size=2, cache_ttl_ms=60_000, instructions="Tools t0 to t4 do nothing useful."
)
reads = 0

for i in range(5):
    server.tool(lambda i=i: f"tool {i} ran", name=f"t{i}", description=f"tool number {i}")


@server.resource("clock://now", mime_type="text/plain")
def now() -> str:
    global reads
    reads += 1
    return f"read number {reads}"


async def main() -> None:
    server_end, client_end = open_memory_transport_pair()
    cache = ResultCache()  # may be shared by several clients

    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, server_end)
        async with open_client(client_end, name="demo-client", version="2.0", cache=cache) as client:
            print(client.server_info["name"], client.protocol_version, client.modern)
            print("instructions:", client.instructions)
            print("capabilities:", sorted(client.server_capabilities))

            page = await client.list_tools()  # one page
            print("first page:", [t.name for t in page.tools], "next:", bool(page.nextCursor))
            page = await client.list_tools(page.nextCursor)
            print("second page:", [t.name for t in page.tools])
            print("all:", [t.name for t in await client.list_all_tools()])
            print((await client.call_tool("t3")).content[0].text)

            print((await client.read_resource("clock://now")).contents[0].text)
            print((await client.read_resource("clock://now")).contents[0].text, "(cached)")
            print((await client.read_resource("clock://now", fresh=True)).contents[0].text)

            # 2026-07-28 has no sessions to notify: a client follows changes by listening
            async with client.listen(tools=True) as changes:
                server.tool(lambda: "new", name="t5")
                async for method, _ in changes:
                    print(method)  # and the cached tools/list is dropped
                    break
            print("now:", [t.name for t in await client.list_all_tools()])
        nursery.cancel_scope.cancel()


trio.run(main)
