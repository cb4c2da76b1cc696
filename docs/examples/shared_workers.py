"""Two workers sharing one store serve one session: a round-robin proxy in front of them
sends each of the client's connections to the next worker (as a load balancer would), so
its calls land on both, and the answer to a question one worker asks may reach the other.
With processes or hosts, each worker opens the same Redis store: open_store("redis://...")."""

import itertools
from functools import partial

import trio

from mcp_trio.client import connect_http
from mcp_trio.client.asks import ElicitResult
from mcp_trio.server import Context, Server
from mcp_trio.store import Store

NAME = {"type": "object", "properties": {"name": {"type": "string"}}}


def make_server(worker: str) -> Server:
    server = Server("shared", "1.0")

    @server.tool
    async def where() -> str:
        await trio.sleep(0.05)  # (a slow call: the client opens more connections)
        return worker

    @server.tool
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", NAME)
        return f"hello {answer.content['name']}"

    return server


async def round_robin(ports: list[int], *, task_status) -> None:
    """A TCP proxy: each new connection goes to the next port."""
    turn = itertools.count()

    async def relay(source, target) -> None:
        while data := await source.receive_some(65536):
            await target.send_all(data)
        await target.send_eof()

    async def handle(client) -> None:
        async with client, await trio.open_tcp_stream("127.0.0.1", ports[next(turn) % len(ports)]) as worker:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(relay, client, worker)
                nursery.start_soon(relay, worker, client)

    await trio.serve_tcp(handle, 0, host="127.0.0.1", task_status=task_status)


async def main() -> None:
    store = Store.in_memory()  # one store, shared by both workers
    async with trio.open_nursery() as nursery:
        ports = []
        for worker in ("a", "b"):
            serve = partial(make_server(worker).serve_http, "127.0.0.1", 0, store=store, worker_id=worker)
            (url,) = await nursery.start(serve)
            ports.append(int(url.rsplit(":", 1)[1].split("/")[0]))
        listeners = await nursery.start(round_robin, ports)
        url = f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}/mcp"

        async def answer(params) -> ElicitResult:
            return ElicitResult(action="accept", content={"name": "Ada"})

        async with connect_http(url, elicitation=answer) as client:
            results = []
            async with trio.open_nursery() as calls:

                async def where() -> None:
                    results.append((await client.call_tool("where")).content[0].text)

                for _ in range(4):
                    calls.start_soon(where)
            print("workers that served the session:", sorted(set(results)))
            print((await client.call_tool("greet")).content[0].text)
        nursery.cancel_scope.cancel()


trio.run(main)
