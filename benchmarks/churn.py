"""What connection churn costs a legitimate client: connections that send a whole request and
leave without reading the answer, together with slowloris connections, from several addresses,
against one server; a legitimate client on another address opens a new connection for each of
its calls and times it (connect, request, answer).

Run from the project root::

    python -m benchmarks.churn                       # the h11 door
    python -m benchmarks.churn --door httptools --leavers 3000 --slowloris 1100

The attackers run in a process of their own (trio, one task per connection; ``--addresses``
source addresses 127.0.2.1, 127.0.2.2 ...), so the client's timing is not theirs.  Reported:
the client's latency alone and during the attack (p50, p99, the slowest), its slowest connect
during the attack (the kernel's part), and what the attack did.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from benchmarks._echo_http import ENV, http_server

ROOT = Path(__file__).resolve().parent.parent
CONNECTS: list[float] = []  # (the client's connect times, during the attack)
CALL = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}},
    }
).encode()
INIT = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        },
    }
).encode()


def _post(port: int, body: bytes, session: str | None = None) -> tuple[int, dict[str, str], bytes]:
    """One POST on a new connection (closed after the answer)."""
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\nConnection: close\r\n"
    )
    if session:
        head += f"Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
    began = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        CONNECTS.append(time.perf_counter() - began)
        sock.sendall(head.encode() + b"\r\n" + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    header, _, payload = data.partition(b"\r\n\r\n")
    lines = header.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, payload


def _client(port: int, seconds: float, latencies: list[float]) -> None:
    """A session, then a call on a new connection every 20 ms for ``seconds``, each timed."""
    status, headers, _ = _post(port, INIT)
    assert status == 200, status
    session = headers["mcp-session-id"]
    _post(port, b'{"jsonrpc":"2.0","method":"notifications/initialized"}', session)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        began = time.perf_counter()
        status, _, payload = _post(port, CALL, session)
        assert status == 200 and b'"hi"' in payload, (status, payload[:200])
        latencies.append(time.perf_counter() - began)
        time.sleep(0.02)


def _summary(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"p50 {statistics.median(ordered) * 1e3:.1f} ms, p99 {p99 * 1e3:.1f} ms, "
        f"slowest {ordered[-1] * 1e3:.1f} ms ({len(ordered)} calls)"
    )


# ---------------------------------------------------------------- the attackers' process


def _attack(port: int, leavers: int, slowloris: int, addresses: int, seconds: float) -> None:
    import trio

    sources = [f"127.0.2.{k}" for k in range(1, addresses + 1)]
    done = {"left": 0, "slowloris opened": 0, "failed": 0}
    request = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {len(INIT)}\r\n\r\n"
    ).encode() + INIT

    async def connect(source: str) -> trio.SocketStream:
        sock = trio.socket.socket()
        await sock.bind((source, 0))
        await sock.connect(("127.0.0.1", port))
        return trio.SocketStream(sock)

    async def leave(n: int) -> None:
        try:
            stream = await connect(sources[n % addresses])
            await stream.send_all(request)
            stream.socket.close()
            done["left"] += 1
        except OSError:
            done["failed"] += 1

    async def trickle(n: int) -> None:
        try:
            stream = await connect(sources[n % addresses])
            await stream.send_all(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: ".encode())
            done["slowloris opened"] += 1
            while True:
                await trio.sleep(1.0)
                await stream.send_all(b"a")
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
            done["failed"] += 1

    async def main() -> None:
        with trio.move_on_after(seconds):
            async with trio.open_nursery() as nursery:
                for n in range(slowloris):
                    nursery.start_soon(trickle, n)
                    if n % 50 == 49:
                        await trio.sleep(0.01)
                limit = trio.CapacityLimiter(64)

                async def one(n: int) -> None:
                    async with limit:
                        await leave(n)

                for n in range(leavers):
                    nursery.start_soon(one, n)
        print(json.dumps(done), flush=True)

    trio.run(main)


def measure(door: str, leavers: int, slowloris: int, addresses: int, seconds: float) -> dict[str, str]:
    with http_server(door=door) as (port, _):
        alone: list[float] = []
        _client(port, seconds / 2, alone)
        attack = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.churn", "--attack", str(port), str(leavers), str(slowloris)]
            + [str(addresses), str(seconds)],
            cwd=ROOT,
            env=ENV,
            stdout=subprocess.PIPE,
            text=True,
        )
        during: list[float] = []
        thread = threading.Thread(target=_client, args=(port, seconds, during))
        time.sleep(0.2)
        CONNECTS.clear()
        thread.start()
        thread.join()
        out, _ = attack.communicate(timeout=seconds + 60)
        return {
            "door": door,
            "alone": _summary(alone),
            "during": _summary(during),
            "slowest connect": f"{max(CONNECTS) * 1e3:.1f} ms (the kernel's part)",
            "attack": out.strip(),
        }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--attack"]:
        port, leavers, slowloris, addresses, seconds = args[1:6]
        _attack(int(port), int(leavers), int(slowloris), int(addresses), float(seconds))
        return 0
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--door", default="h11", choices=("h11", "httptools", "hypercorn"))
    parser.add_argument("--leavers", type=int, default=3000, help="connections that send a request and leave")
    parser.add_argument("--slowloris", type=int, default=1100, help="connections trickling a head")
    parser.add_argument("--addresses", type=int, default=8, help="source addresses of the attack")
    parser.add_argument(
        "--seconds", type=float, default=10.0, help="seconds the client calls during the attack"
    )
    options = parser.parse_args(args)
    result = measure(options.door, options.leavers, options.slowloris, options.addresses, options.seconds)
    for key, value in result.items():
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
