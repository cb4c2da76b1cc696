"""A tool that runs as a task: answered at once, polled, its result fetched later; in 2025-11-25
(the client asks for a task) and with the 2026-07-28 Tasks extension (the server decides)."""

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


async def legacy() -> None:
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


EXTENSION = "io.modelcontextprotocol/tasks"


async def extension() -> None:
    server_end, client_end = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, server_end)
        # a client that declares the extension gets a task for every task-capable tool
        async with open_client(client_end, capabilities={"extensions": {EXTENSION: {}}}) as client:
            print(
                client.protocol_version,
                "extension offered:",
                EXTENSION in client.server_capabilities["extensions"],
            )
            created = await client.session.request(
                "tools/call", {"name": "render", "arguments": {"scene": "teapot"}}
            )
            print("created:", type(created).__name__, created.resultType, created.status)
            while True:  # tasks/get carries the result (or the error) once there is one
                task = await client.session.request("tasks/get", {"taskId": created.taskId})
                if task.status not in ("working", "input_required"):
                    break
                await trio.sleep(0.05)  # the server suggests created.pollIntervalMs
            print("then:", task.status, "->", task.result["content"][0]["text"])
        nursery.cancel_scope.cancel()


async def main() -> None:
    print("-- 2025-11-25")
    await legacy()
    print("-- 2026-07-28, Tasks extension")
    await extension()


trio.run(main)
