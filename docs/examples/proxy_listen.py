"""Resource updates through a proxy, in 2026-07-28: a client's ``subscriptions/listen`` stream asks
for the updates of a resource; the proxy's own stream to the server watches it while the
client's is open, and passes each update on."""

import trio

from mcp_trio.client import connect
from mcp_trio.proxy import proxy
from mcp_trio.server import Server

upstream = Server("weather", "1.0")


@upstream.resource("weather://today", mime_type="text/plain")
def today() -> str:
    return "sunny"


async def main() -> None:
    async with connect(proxy(upstream)) as client:
        print("speaking", client.protocol_version)
        async with client.listen(resource_uris=["weather://today"]) as subscription:
            print("acknowledged:", subscription.acknowledged)
            await upstream.notify_resource_updated("weather://today")  # (the server's news)
            with trio.fail_after(5):
                method, notice = await anext(subscription)
            print(method, notice.uri)


trio.run(main)
