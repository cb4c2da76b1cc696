"""A server ready for operators: health and readiness routes, statistics and Prometheus
metrics next to the MCP endpoint, each asked once (port 0: the system picks a free port).

Also a server file: ``mcp-trio serve operations.py --http 127.0.0.1:8000 --metrics-path /metrics``."""

import urllib.error
import urllib.request
from functools import partial

import trio

from mcp_trio.client import connect_http
from mcp_trio.server import HttpRequest, HttpResponse, Server

server = Server("shop", "1.0")
warmed_up = trio.Event()


@server.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.route("/healthz")
def health() -> str:
    """Liveness: the process answers."""
    return "ok"


@server.route("/readyz", on_loop=True)
def readiness() -> HttpResponse:
    """Readiness: 503 until the server is warmed up."""
    if not warmed_up.is_set():
        return HttpResponse("warming up", status=503, headers={"Retry-After": "1"})
    return HttpResponse("ready")


@server.route("/stats")
async def stats(request: HttpRequest) -> dict[str, int]:
    """The server's statistics as JSON (``?all`` adds the sessions ever opened)."""
    numbers = server.statistics()
    answer = {"sessions_open": numbers.sessions_open, "requests_ok": numbers.requests_ok}
    if request.query == "all":
        answer["sessions_total"] = numbers.sessions_total
    return answer


def get(url: str) -> str:
    """GET ``url`` with the standard library's client: status and body."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return f"{response.status} {response.read().decode()}"
    except urllib.error.HTTPError as error:
        return f"{error.code} {error.read().decode()}"


async def main() -> None:
    async with trio.open_nursery() as nursery:
        serve = partial(server.serve_http, "127.0.0.1", 0, metrics_path="/metrics")
        (url,) = await nursery.start(serve)
        base = url.removesuffix("/mcp")
        for path in ("/healthz", "/readyz"):
            print(path, await trio.to_thread.run_sync(get, base + path))
        warmed_up.set()
        print("/readyz", await trio.to_thread.run_sync(get, base + "/readyz"))
        async with connect_http(url, versions=["2025-06-18"]) as client:
            result = await client.call_tool("add", {"a": 20, "b": 22})
            print("add:", result.content[0].text)
            print("/stats", await trio.to_thread.run_sync(get, base + "/stats?all"))
        metrics = await trio.to_thread.run_sync(get, base + "/metrics")
        print("\n".join(line for line in metrics.splitlines() if line.startswith("mcp_requests_total")))
        nursery.cancel_scope.cancel()


if __name__ == "__main__":
    trio.run(main)
