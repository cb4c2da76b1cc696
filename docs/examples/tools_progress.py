"""Long-running tools: progress, timeouts that progress resets, cancellation."""

import trio

from mcp_trio import RequestTimeout, open_memory_transport_pair
from mcp_trio.client import open_client
from mcp_trio.server import Context, Server

server = Server("long-running", "1.0")
# the server tells main() when a handler was cancelled
report_stop, stops = trio.open_memory_channel[str](10)


@server.tool
async def crunch(steps: int, ctx: Context) -> str:
    """Work in steps, reporting each."""
    for step in range(1, steps + 1):
        await trio.sleep(0.3)
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
    return f"crunched {steps} steps"


@server.tool
async def wait_forever() -> str:
    """Never answers: only a cancellation ends it."""
    try:
        await trio.sleep_forever()
    finally:  # the client cancelled: this request's cancel scope was cancelled
        report_stop.send_nowait("wait_forever was cancelled")


async def main() -> None:
    server_end, client_end = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, server_end)
        async with open_client(client_end) as client:

            async def show(progress: float, total: float | None, message: str | None) -> None:
                print(f"progress {progress}/{total}: {message}")

            # 4 steps of 0.3 s is longer than the 1 s timeout, but each progress
            # notification starts the timeout again (max_total_timeout= bounds it).
            result = await client.call_tool("crunch", {"steps": 4}, timeout=1, on_progress=show)
            print(result.content[0].text)

            try:
                await client.call_tool("wait_forever", timeout=0.2)
            except RequestTimeout as exc:
                print("timed out:", exc)
            print("server:", await stops.receive())

            with trio.move_on_after(0.2):  # cancelling the caller cancels the request
                await client.call_tool("wait_forever")
            print("server:", await stops.receive())


trio.run(main)
