"""A tool that runs as a task (2025-11-25): answered at once, polled, its result fetched later."""

import trio

from mcp_trio import open_memory_transport_pair
from mcp_trio.client import open_client
from mcp_trio.server import Context, Server

server = Server("jobs", "1.0")


@server.tool(task_support="optional")  # "forbidden" (the default), "optional" or "required"
async def render(scene: str, ctx: Context) -> str:
    """Render a scene, slowly."""
    for step in range(1, 4):
        await trio.sleep(0.05)
        await ctx.report_progress(step, 3)
    return f"rendered {scene}"


async def main() -> None:
    server_end, client_end = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, server_end)
        async with open_client(client_end, versions=["2025-11-25"]) as client:
            tool = (await client.list_all_tools())[0]
            print("taskSupport:", tool.execution.taskSupport)
            print("server tasks capability:", sorted(client.server_capabilities["tasks"]))

            # the call is answered at once with a task; the tool runs on
            created = await client.session.request(
                "tools/call",
                {"name": "render", "arguments": {"scene": "teapot"}, "task": {"ttl": 60_000}},
            )
            task_id = created.task.taskId
            print("created:", type(created).__name__, created.task.status)

            while True:
                task = await client.session.request("tasks/get", {"taskId": task_id})
                if task.status != "working":
                    break
                await trio.sleep(0.05)
            print("then:", task.status)

            # tasks/result waits for the end and returns the tool's result, as JSON
            result = await client.session.request("tasks/result", {"taskId": task_id})
            print("result:", result["content"][0]["text"])
            listed = await client.session.request("tasks/list")
            print("tasks listed:", len(listed.tasks))
        nursery.cancel_scope.cancel()


trio.run(main)
