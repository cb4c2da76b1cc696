"""What a big 2025-03-26 batch does to another session: one session sends batches of quick
``echo`` calls back to back while another calls ``echo`` one at a time, timed.

Run from the project root::

    python -m benchmarks.fairness                  # the h11 door, batches of 2,000
    python -m benchmarks.fairness --door httptools --members 2000 --seconds 6

The server is ``benchmarks/echo_server.py`` over Streamable HTTP.  Reported: the other session's
p50 and p99 alone, then while the batches run, and how many batches were answered meanwhile (each
batch's every answer checked).
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks._echo_http import http_server

ROOT = Path(__file__).resolve().parent.parent
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def _post(
    conn: http.client.HTTPConnection, body: Any, session: str | None = None
) -> tuple[str | None, bytes]:
    headers = dict(HEADERS)
    if session:
        headers |= {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-03-26"}
    conn.request("POST", "/mcp", body=json.dumps(body), headers=headers)
    response = conn.getresponse()
    return response.getheader("Mcp-Session-Id"), response.read()


def _session(port: int) -> tuple[http.client.HTTPConnection, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port)
    info = {"name": "fairness", "version": "1"}
    init = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": info}
    session, _ = _post(conn, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
    assert session is not None
    _post(conn, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    return conn, session


def _call(id: int) -> dict[str, Any]:
    params = {"name": "echo", "arguments": {"text": "hi"}}
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}


def _timed_calls(port: int, seconds: float) -> list[float]:
    conn, session = _session(port)
    latencies = []
    end = time.perf_counter() + seconds
    id = 1
    while time.perf_counter() < end:
        began = time.perf_counter()
        _, data = _post(conn, _call(id), session)
        latencies.append(time.perf_counter() - began)
        assert b'"hi"' in data, data[:200]
        id += 1
    return latencies


def _summary(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ordered) * 1e3:.2f} ms, p99 {p99 * 1e3:.2f} ms ({len(ordered)} calls)"


def measure(door: str, members: int, seconds: float) -> dict[str, str]:
    with http_server(door=door) as (port, _):
        alone = _timed_calls(port, seconds / 2)
        stop = threading.Event()
        batches = [0]

        def batcher() -> None:
            conn, session = _session(port)
            while not stop.is_set():
                first = batches[0] * members
                _, data = _post(conn, [_call(first + i) for i in range(members)], session)
                assert data.count(b'"hi"') == members, data[:200]
                batches[0] += 1

        thread = threading.Thread(target=batcher)
        thread.start()
        time.sleep(0.5)
        during = _timed_calls(port, seconds)
        stop.set()
        thread.join()
        return {
            "door": door,
            "alone": _summary(alone),
            "during batches": _summary(during),
            "batches": f"{batches[0]} of {members} calls",
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--door", default="h11", choices=("h11", "httptools", "hypercorn"))
    parser.add_argument("--members", type=int, default=2000, help="calls in each batch")
    parser.add_argument("--seconds", type=float, default=6.0, help="seconds of calls during the batches")
    options = parser.parse_args(argv)
    for key, value in measure(options.door, options.members, options.seconds).items():
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
