"""A Streamable HTTP server with one flaw, for the stream and session oracles (standard library).

``python sse_server.py MODE``; it prints its URL, answers initialize with JSON and every other
request on an SSE stream:

* ``open``: the stream stays open 5 s after the response ("the server SHOULD terminate the SSE
  stream" once the response is sent).
* ``wedge``: after a batch, every later request gets an SSE stream that ends without a response.
* ``limit``: a request whose client left before the answer stays "in progress" for good, a
  batch too (answered on a stream that never ends); beyond 64 requests in progress in the
  session, every request gets 429.
* ``limit-singles``: ``limit`` for single requests only; a batch is refused with 400, as a
  server of a revision without batches must, and is never in progress.
* ``good-half``: a rate limit that refuses every second request of a burst at once (429), the
  next one after a pause taken; nothing left in progress.
* ``limit-half``: ``limit-singles`` behind that rate limit: of a burst of abandoned requests only
  half stay in progress, so it takes twice as many to fill the 64.
* ``sessions-400``: a request with a session id it does not know (never issued, or ended by
  DELETE) gets 400 (the terminated one MUST get 404).
* ``notification-200``: a notification gets 200 with an empty body (it MUST be 202).
* ``good``: none.

It reads requests nested deeper than Python's default recursion limit (the fuzzer's deep-nesting
probes), as a server written in another language would.
"""

from __future__ import annotations

import json
import select
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[1] if len(sys.argv) > 1 else "good"
sys.setrecursionlimit(20_000)  # (json.loads of a body nested 1,000+ levels deep)
WEDGED = threading.Event()
LIMIT = 64
IN_PROGRESS: dict[str, int] = {}  # session id -> requests in progress
LOCK = threading.Lock()
BURST = 0.1  # seconds: a request this soon after the last one taken is part of a burst
#: Seconds a ``limit*`` mode waits for a request's client to leave before answering it (a client
#: gone by then leaves it in progress).  The modes that only the abandoned-requests probe meets
#: wait longer: on a loaded machine the probe closes its connections more than 0.15 s after the
#: server began waiting, the server then answered requests the probe counted as left in flight,
#: and the leak did not show (a request that stays, like the ping after, waits this long once).
LEAVING = 1.0 if MODE in ("limit-half", "limit-singles") else 0.15
LAST_TAKEN: dict[str, tuple[float, bool]] = {}  # session id -> (when the last was taken, last refused)


class Server(ThreadingHTTPServer):
    request_queue_size = 128  # (the probe of abandoned requests opens 100 connections at once)

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # (a client that left: not news)
            super().handle_error(request, client_address)  # type: ignore[arg-type]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # bodies end when the connection closes

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            msg = json.loads(body)
        except ValueError:
            self.reply(400, b"")
            return
        if MODE in ("good-half", "limit-half") and self.rate_limited(msg):
            return
        if MODE == "limit" and msg != [] and self.limited(msg):
            return
        if MODE in ("limit-singles", "limit-half") and not isinstance(msg, list) and self.limited(msg):
            return
        if MODE == "sessions-400" and not (isinstance(msg, dict) and msg.get("method") == "initialize"):
            with LOCK:
                known = self.headers.get("Mcp-Session-Id", "") in IN_PROGRESS
            if not known:
                self.reply(400, b"")
                return
        if isinstance(msg, list):
            WEDGED.set() if MODE == "wedge" else None
            self.reply(400, b"")
            return
        if "id" not in msg or "method" not in msg:
            self.reply(200 if MODE == "notification-200" and "method" in msg else 202, b"")
            return
        if msg["method"] == "initialize":
            result = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {},
                "serverInfo": {"name": "sse", "version": "1"},
            }
            answer = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
            with LOCK:
                sid = f"s{len(IN_PROGRESS) + 1}"
                IN_PROGRESS[sid] = 0
            self.reply(200, answer, "application/json", {"Mcp-Session-Id": sid})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        if not WEDGED.is_set():
            known = msg["method"] == "ping"
            answer = (
                {"jsonrpc": "2.0", "id": msg["id"], "result": {}}
                if known
                else {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}
            )
            self.wfile.write(b"event: message\ndata: " + json.dumps(answer).encode() + b"\n\n")
            self.wfile.flush()
            if MODE == "open":
                time.sleep(5)

    def rate_limited(self, msg: object) -> bool:
        """``*-half`` modes: in a burst, every second request is refused at once with 429."""
        if isinstance(msg, dict) and msg.get("method") == "initialize":
            return False
        sid, now = self.headers.get("Mcp-Session-Id", ""), time.monotonic()
        with LOCK:
            last, refused = LAST_TAKEN.get(sid, (0.0, True))
            refuse = now - last < BURST and not refused
            LAST_TAKEN[sid] = (last, True) if refuse else (now, False)
        if refuse:
            try:
                self.reply(429, b"")
            except OSError:
                pass  # (a client that left)
        return refuse

    def limited(self, msg: object) -> bool:
        """``limit`` mode: refuse beyond the limit; count requests left behind as in progress."""
        if isinstance(msg, dict) and msg.get("method") == "initialize":
            return False
        sid = self.headers.get("Mcp-Session-Id", "")
        with LOCK:
            full = IN_PROGRESS.get(sid, 0) >= LIMIT
        if full:
            try:
                self.reply(429, b"")
            except OSError:
                pass  # (a client that left)
            return True
        if isinstance(msg, list) or self.client_left():
            with LOCK:
                IN_PROGRESS[sid] = IN_PROGRESS.get(sid, 0) + (len(msg) if isinstance(msg, list) else 1)
            return True
        return False

    def client_left(self) -> bool:
        sock = self.connection
        readable, _, _ = select.select([sock], [], [], LEAVING)
        try:
            return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def do_DELETE(self) -> None:
        with LOCK:
            IN_PROGRESS.pop(self.headers.get("Mcp-Session-Id", ""), None)
        self.reply(200, b"")

    def reply(
        self, status: int, body: bytes, ctype: str = "application/json", extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)


server = Server(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(f"http://127.0.0.1:{server.server_address[1]}/mcp", flush=True)
server.serve_forever()
