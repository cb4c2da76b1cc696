"""Resources: fixed URIs, templates, binary contents, subscriptions and list changes."""

import trio

from mcp_trio import RESOURCE_NOT_FOUND, McpError, open_memory_transport_pair
from mcp_trio.client import open_client
from mcp_trio.server import Server

server = Server("notes", "1.0")
NOTES = {"todo": "buy milk", "ideas": "a trio MCP server"}


@server.resource("notes://index", mime_type="text/plain")
def index() -> str:
    """The names of all notes."""
    return "\n".join(sorted(NOTES))


@server.resource("notes://{name}", mime_type="text/plain")
def note(name: str) -> str:
    """One note, by name (an RFC 6570 URI template)."""
    if name not in NOTES:
        raise McpError(RESOURCE_NOT_FOUND, f"no note {name!r}")
    return NOTES[name]


@server.resource("images://logo", mime_type="image/png")
def logo() -> bytes:
    """bytes become a base64 blob."""
    return b"\x89PNG..."


@server.resource("notes://stats")
def stats() -> dict[str, int]:
    """A dict (or any JSON value) is served as JSON text, application/json."""
    return {"notes": len(NOTES), "characters": sum(map(len, NOTES.values()))}


async def edit(name: str, text: str) -> None:
    NOTES[name] = text
    await server.notify_resource_updated(f"notes://{name}")


async def legacy() -> None:
    """Up to 2025-11-25: resources/subscribe, notifications on the session."""
    server_end, client_end = open_memory_transport_pair()
    notes, notifications = trio.open_memory_channel[str](10)

    async def on_resource_updated(uri: str) -> None:
        await notes.send(f"updated: {uri}")

    async def on_list_changed(kind: str) -> None:
        await notes.send(f"list changed: {kind}")

    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, server_end)
        async with open_client(
            client_end,
            versions=["2025-11-25"],
            on_resource_updated=on_resource_updated,
            on_list_changed=on_list_changed,
        ) as client:
            print("resources:", [r.uri for r in await client.list_all_resources()])
            print("templates:", [t.uriTemplate for t in await client.list_all_resource_templates()])
            print("index:", (await client.read_resource("notes://index")).contents[0].text.split())
            stats = (await client.read_resource("notes://stats")).contents[0]
            print("stats:", stats.mimeType, stats.text)
            blob = (await client.read_resource("images://logo")).contents[0]
            print("logo:", blob.mimeType, blob.blob)
            try:
                await client.read_resource("notes://shopping")
            except McpError as exc:
                print("error:", exc.code, exc.message)

            await client.subscribe_resource("notes://todo")
            await edit("todo", "buy oat milk")
            print(await notifications.receive())
            print("todo:", (await client.read_resource("notes://todo")).contents[0].text)

            # registering (or removing) a resource tells every session
            server.resource("notes://archive")(lambda: "nothing yet")
            print(await notifications.receive())
            server.remove_resource("notes://archive")
            print(await notifications.receive())
        nursery.cancel_scope.cancel()


async def modern() -> None:
    """2026-07-28: a subscriptions/listen stream carries the same notifications."""
    server_end, client_end = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, server_end)
        async with open_client(client_end, versions=["2026-07-28"]) as client:
            async with client.listen(resources=True, resource_uris=["notes://ideas"]) as events:
                await edit("ideas", "a faster one")
                server.resource("notes://archive")(lambda: "nothing yet")
                seen = []
                async for method, params in events:
                    seen.append(method)
                    print(method, params.uri or "")
                    if len(seen) == 2:
                        break
        nursery.cancel_scope.cancel()


async def main() -> None:
    print("-- 2025-11-25")
    await legacy()
    print("-- 2026-07-28")
    await modern()


trio.run(main)
