"""The ``http`` campaign's probes: Streamable HTTP below the JSON-RPC layer.

Each probe (:data:`HTTP_CASES`) is one HTTP-level event on a live :class:`~._session.Session`:
a request with a header removed or changed (:data:`HTTP_PROBES`), a ``DELETE`` and a
request in the ended session, a truncated or chunked body, a method Streamable HTTP gives no
meaning, a ``GET`` with a ``Last-Event-ID`` never issued, an SSE stream dropped and resumed.
:func:`_http_case` runs one and returns the violations the statuses and answers show.

:data:`ABANDON_PROBE` is not drawn by the search: it runs once per ``http`` campaign (it sends
:data:`ABANDONED` requests) and replays like the others.
"""

from __future__ import annotations

import json
import select
import socket
import time

from ..types import _versions
from . import driver as drv
from . import oracles as orc
from ._session import Session

__all__ = ["ABANDON_PROBE", "HTTP_CASES", "HTTP_PROBES"]

#: The probe of requests left in progress after the client left (run once per campaign).
ABANDON_PROBE = "abandoned-requests"
#: How many requests the probe leaves in flight: more than common per-session concurrency limits (64).
ABANDONED = 100
#: POSTs written in one round, each on a connection of its own.
ABANDON_ROUND = 10
#: Seconds a round's connections stay open once written: what the server sends back by then (a
#: refusal, the answer) says the request is not left in flight.
ABANDON_PEEK = 0.05
#: Bytes read of each abandoned POST's answer, at most.
ABANDON_READ = 4096
#: POSTs the probe writes at most to leave :data:`ABANDONED` requests in flight (a server refuses some).
ABANDON_WRITES = 3 * ABANDONED
#: Seconds the server gets to notice the abandoned requests before the ping after them.
ABANDON_SETTLE = 0.5
#: Seconds the probe may spend abandoning requests (a slow server to connect to must not eat a
#: short --time budget); it says how many it left when it stopped short.
ABANDON_TIME = 3.0


#: Header probes of the ``http`` campaign: (name, header changes, expected statuses or None for "no 5xx").
HTTP_PROBES: dict[str, tuple[dict[str, str | None], set[int] | None]] = {
    "no-session-id": ({"Mcp-Session-Id": None}, {400}),
    "unknown-session-id": ({"Mcp-Session-Id": "fuzz-no-such-session"}, {404}),
    "bad-protocol-version": ({"MCP-Protocol-Version": "1999-01-01"}, {400}),
    "foreign-origin": ({"Origin": "http://evil.example"}, {403}),
    "accept-html": ({"Accept": "text/html"}, None),
    "content-type-text": ({"Content-Type": "text/plain"}, None),
    "no-content-type": ({"Content-Type": None}, None),
    # DNS rebinding: a page on evil.example resolving to 127.0.0.1 reaches the server with its own
    # Host.  The spec asks servers to validate Origin (a MUST) and to bind to localhost; refusing a
    # foreign Host is what the SDKs' DNS-rebinding protection does, so it is a note, not a violation.
    "foreign-host": ({"Host": "evil.example"}, {400, 403, 421}),
}
#: The first revision with the ``MCP-Protocol-Version`` header ("If the server receives a request
#: with an invalid or unsupported MCP-Protocol-Version, it MUST respond with 400 Bad Request"):
#: a 2024-11-05 or 2025-03-26 server owes it nothing, and is not probed with it.
PROTOCOL_HEADER_SINCE = "2025-06-18"
#: Methods Streamable HTTP gives no meaning: any 4xx (ideally 405), never a 5xx or a 2xx.
WRONG_METHODS = ("PUT", "PATCH")


def _http_case(session: Session, probe: str) -> list[orc.Violation]:
    conn = session.conn
    assert isinstance(conn, drv.HttpConnection)
    pid, body = session.probe_message()
    out: list[orc.Violation] = []
    if probe == "delete-then-reuse":
        if conn.session_id is None:
            return out
        hdrs = {k: v for k, v in conn.base_headers().items() if k != "Content-Type"}
        ex = conn.request("DELETE", b"", hdrs, set(), session.timeout)
        if ex.status is not None and ex.status >= 500:
            out.append(orc.Violation("http-status", f"DELETE answered {ex.status}", "5xx"))
        if ex.status is not None and 200 <= ex.status < 300:
            again = conn.request("POST", body, conn.base_headers(), {orc.idkey(pid)}, session.timeout)
            if again.status != 404:
                out.append(
                    orc.Violation(
                        "http-session",
                        f"a request in a session ended by DELETE got {again.status}, not 404",
                        "deleted-session",
                    )
                )
        conn.session_id = None  # the session is over either way: start another
        session._handshake()
        return out
    if probe == "wrong-method":
        return _wrong_methods(session, body)
    if probe == ABANDON_PROBE:
        return _abandoned_requests(session)
    if probe == "get-bad-last-event-id":
        return _bad_last_event_id(session)
    if probe == "sse-disconnect-resume":
        return _sse_disconnect_resume(session, pid, body)
    if probe in ("truncated-body", "chunked-body"):
        host = conn.target.host_header
        base = conn.base_headers()
        if session.stateless:
            base["Mcp-Method"] = "server/discover"
        extra = "".join(f"{k}: {v}\r\n" for k, v in base.items() if k != "Host")
        if probe == "truncated-body":
            raw = (
                f"POST {conn.target.path} HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Length: "
                f"{len(body) + 50}\r\nConnection: close\r\n\r\n"
            ).encode() + body
        else:
            raw = (
                (
                    f"POST {conn.target.path} HTTP/1.1\r\nHost: {host}\r\n{extra}Transfer-Encoding: chunked"
                    f"\r\n\r\n{len(body):x}\r\n"
                ).encode()
                + body
                + b"\r\n0\r\n\r\n"
            )
        ex = conn.request("POST", body, {}, {orc.idkey(pid)}, session.timeout, raw=raw)
        if ex.status is not None and ex.status >= 500:
            out.append(orc.Violation("http-status", f"{probe}: HTTP {ex.status}", "5xx"))
        if probe == "chunked-body" and ex.status != 200:
            out.append(
                orc.Violation("http-status", f"a chunked POST of a valid request got {ex.status}", "chunked")
            )
        return out
    changes, expected = HTTP_PROBES[probe]
    if probe in ("no-session-id", "unknown-session-id") and (conn.session_id is None or session.stateless):
        return out
    if probe == "bad-protocol-version" and (session.stateless or session.negotiated < PROTOCOL_HEADER_SINCE):
        return out  # (2026-07-28 checks the header against _meta: HeaderMismatch, another rule)
    hdrs = conn.base_headers()
    hdrs.update({"Mcp-Method": "ping"} if session.stateless else {})
    drv.replace_headers(hdrs, changes)
    if session.stateless:
        hdrs["Mcp-Method"] = "server/discover"
    ex = conn.request("POST", body, hdrs, {orc.idkey(pid)}, session.timeout)
    if ex.status is None:
        out.append(orc.Violation("http-status", f"{probe}: no HTTP answer ({ex.error})", "no-answer"))
    elif ex.status >= 500:
        out.append(orc.Violation("http-status", f"{probe}: HTTP {ex.status}", "5xx"))
    elif expected is not None and ex.status not in expected:
        out.append(
            orc.Violation(
                "http-session",
                f"{probe}: HTTP {ex.status}, expected {sorted(expected)}",
                probe,  # (graded by its rule: foreign-host is a judgement call, no-session-id a SHOULD)
            )
        )
    return out


def _abandoned_requests(session: Session) -> list[orc.Violation]:
    """Leave :data:`ABANDONED` requests in flight and see whether the session still answers.

    The POSTs go in rounds of :data:`ABANDON_ROUND`, each on its own connection, closed
    :data:`ABANDON_PEEK` after the round is written with its answer unread; in revisions without
    JSON-RPC batching a batch of two pings goes with every second ping.  What each connection
    held at its close says what it left (:func:`_left`): a refusal (an HTTP error status) or an
    answer leaves nothing in flight, a response head without the answer or silence leaves the
    request in flight.  Rounds go on until :data:`ABANDONED` requests are in flight, a whole
    round is refused, :data:`ABANDON_WRITES` POSTs are written or :data:`ABANDON_TIME` passes.
    With any left in flight, a ping with a new id must still get its result promptly:
    disconnection does not cancel a request, but work left in progress for a client that is gone
    must not starve the session (the ping is a MUST).  With none left, there is nothing to judge."""
    conn = session.conn
    assert isinstance(conn, drv.HttpConnection)
    batches = not _versions.supports_batching(session.negotiated) and session.negotiated >= "2025-06-18"
    tally = {"flight": 0, "refused": 0, "answered": 0, "failed": 0}
    written = 0
    stop = time.monotonic() + ABANDON_TIME
    while tally["flight"] < ABANDONED and written < ABANDON_WRITES and time.monotonic() < stop:
        bodies: list[tuple[int, bytes]] = []  # (requests in the body, body)
        for n in range(ABANDON_ROUND):
            bodies.append((1, session.probe_message()[1]))
            if batches and n % 2:
                pair = [json.loads(session.probe_message()[1]), json.loads(session.probe_message()[1])]
                bodies.append((2, json.dumps(pair, separators=(",", ":")).encode()))
        outcomes = _post_and_leave(session, [body for _, body in bodies])
        written += len(bodies)
        for (count, _), outcome in zip(bodies, outcomes, strict=True):
            tally[outcome] += count
        if all(outcome == "refused" for outcome in outcomes):
            break  # (the server refuses everything now: more would not leave more in flight)
    left = tally["flight"]
    failed = f", {tally['failed']} not written" if tally["failed"] else ""
    what = (
        f"{left} request{'s' if left != 1 else ''} in flight (of {sum(tally.values())} in {written} "
        f"POSTs: {tally['refused']} refused at once, {tally['answered']} answered before the client "
        f"left{failed})"
    )
    if left < ABANDONED and time.monotonic() >= stop:
        what += f", stopped after {ABANDON_TIME:g} s"
    if not left:
        conn.events.append(
            {"t": conn.now(), "dir": "note", "text": f"left {what}: nothing left in progress to judge"}
        )
        return []
    conn.events.append(
        {"t": conn.now(), "dir": "note", "text": f"left {what}: each POST's connection closed unread"}
    )
    time.sleep(ABANDON_SETTLE)
    pid, body = session.probe_message()
    hdrs = conn.base_headers()
    drv.replace_headers(hdrs, session.headers_for(body) or {})
    ex = conn.request("POST", body, hdrs, {orc.idkey(pid)}, min(session.timeout, 5.0))
    answer = next(
        (
            r.message
            for r in conn.received
            if r.http == ex.index and isinstance(r.message, dict) and r.message.get("id") == pid
        ),
        None,
    )
    if answer is not None and "result" in answer:
        return []
    if answer is not None:
        got = f"the error {orc._excerpt(answer)} (HTTP {ex.status})"
    elif ex.status is not None:
        got = f"HTTP {ex.status} without an answer" + (f" ({ex.error})" if ex.error else "")
    else:
        got = f"no answer ({ex.error})"
    if conn.session_id is not None:  # that session is spent: the checks after the probe get another
        conn.session_id = None
        session._handshake()
    return [
        orc.Violation(
            "alive",
            f"after the client left {what}, each POST's connection closed before the answer, "
            f"the next ping in the session got {got}: requests are left in progress",
            "left-in-progress",
        )
    ]


def _post_and_leave(session: Session, bodies: list[bytes]) -> list[str]:
    """Write one POST of each body in the session, each on a connection of its own, wait
    :data:`ABANDON_PEEK` for what the server sends back at once, and close them all unread
    beyond that; what each left (:func:`_left`, or ``failed`` when it could not be written)."""
    conn = session.conn
    assert isinstance(conn, drv.HttpConnection)
    socks: list[socket.socket | None] = []
    for body in bodies:
        hdrs = conn.base_headers()
        drv.replace_headers(hdrs, session.headers_for(body) or {})
        head = f"POST {conn.target.path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items())
        raw = f"{head}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body
        conn.log("send", body, abandoned=True)
        try:
            sock = socket.create_connection((conn.target.host, conn.target.port), timeout=session.timeout)
        except OSError as exc:
            conn.events.append({"t": conn.now(), "dir": "note", "text": f"an abandoned POST failed: {exc}"})
            socks.append(None)
            continue
        try:
            sock.sendall(raw)
        except OSError as exc:
            sock.close()
            conn.events.append({"t": conn.now(), "dir": "note", "text": f"an abandoned POST failed: {exc}"})
            socks.append(None)
            continue
        sock.setblocking(False)
        socks.append(sock)
    got = [bytearray() for _ in socks]
    live = {s.fileno(): n for n, s in enumerate(socks) if s is not None}
    deadline = time.monotonic() + ABANDON_PEEK
    while live and (wait := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select(list(live), [], [], wait)
        for fd in readable:
            n = live[fd]
            peer = socks[n]
            assert peer is not None
            try:
                data = peer.recv(ABANDON_READ)
            except OSError:
                data = b""
            got[n] += data
            if not data or len(got[n]) >= ABANDON_READ:
                del live[fd]  # (the server is done with it, or it said enough)
    for peer in socks:
        if peer is not None:
            peer.close()
    return ["failed" if peer is None else _left(bytes(data)) for peer, data in zip(socks, got, strict=True)]


def _left(data: bytes) -> str:
    """What an abandoned POST left, from what the server sent before the client closed:
    ``refused`` (an HTTP status of 300 or more), ``answered`` (a JSON body, a JSON-RPC response on
    the SSE stream, or a 2xx without a stream) or ``flight`` (nothing yet, or a stream head and
    maybe notifications, without the answer: the request was taken and is in progress)."""
    if not data:
        return "flight"
    status_line, _, rest = data.partition(b"\r\n")
    parts = status_line.split()
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    if status is None:
        return "flight"  # (not even the status line yet)
    if status >= 300:
        return "refused"
    head, _, body = rest.partition(b"\r\n\r\n")
    if b"text/event-stream" not in head.lower():
        return "answered"
    for line in body.splitlines():
        if not line.startswith(b"data:"):
            continue
        try:
            msg = json.loads(line[5:])
        except ValueError:
            continue
        if isinstance(msg, dict) and "method" not in msg and ("result" in msg or "error" in msg):
            return "answered"
    return "flight"


def _wrong_methods(session: Session, body: bytes) -> list[orc.Violation]:
    conn = session.conn
    assert isinstance(conn, drv.HttpConnection)
    answers = {
        method: conn.request(method, body, conn.base_headers(), set(), session.timeout)
        for method in WRONG_METHODS
    }
    return [
        orc.Violation(
            "http-status",
            f"{method} answered {ex.status or ex.error} (want a 4xx, ideally 405)",
            "wrong-method",
        )
        for method, ex in answers.items()
        if ex.status is None or not 400 <= ex.status < 500
    ]


def _bad_last_event_id(session: Session) -> list[orc.Violation]:
    """GET with a Last-Event-ID the server never issued: a 4xx, a 405 (no GET stream), or a stream
    that replays nothing of another stream; never a 5xx.  The stream is read for a moment only."""
    conn = session.conn
    assert isinstance(conn, drv.HttpConnection)
    hdrs = {k: v for k, v in conn.base_headers().items() if k != "Content-Type"}
    hdrs.update({"Accept": "text/event-stream", "Last-Event-ID": "fuzz-never-issued-0"})
    before = len(conn.received)
    ex = conn.request("GET", b"", hdrs, set(), min(session.timeout, 0.5))
    out = []
    if ex.status is None or ex.status >= 500:
        out.append(
            orc.Violation(
                "http-status",
                f"GET with an unknown Last-Event-ID: {ex.status or ex.error}",
                _get_detail(session, "last-event-id"),
            )
        )
    replayed = [
        r
        for r in conn.received[before:]
        if ex.status == 200
        and isinstance(r.message, dict)
        and r.message.get("id") is not None
        and "method" not in r.message
    ]
    if replayed:
        out.append(
            orc.Violation(
                "http-session",
                "a GET with a Last-Event-ID the server never issued got "
                f"responses: {orc._excerpt(replayed[0].message)}",
                "last-event-id-replay",
                **_no_streams(session),
            )
        )
    return out


def _get_detail(session: Session, detail: str) -> str:
    """2026-07-28 has no GET stream and no resumption (its text asks for 405, and a SHOULD):
    a 5xx to a GET is judged as any 5xx is there, not by the earlier revisions' GET MUST."""
    return "5xx" if session.stateless else detail


def _no_streams(session: Session) -> dict[str, str]:
    """In 2026-07-28 ("A Last-Event-ID header: ignore it; streams are not resumable", a SHOULD)
    a replay on a GET stream is a note, under the resumption rule."""
    return {"rule": "http-resume", "severity": "note"} if session.stateless else {}


def _sse_disconnect_resume(session: Session, pid: str, body: bytes) -> list[orc.Violation]:
    """Drop a request's SSE stream right after its first event with an id, then resume it with
    ``GET`` + ``Last-Event-ID``.  A server that gives its events ids says it can resume; the
    resumed stream must replay nothing of another stream (a MUST NOT), and the answer should come
    on it (a MAY: a note when it does not).  A server without event ids is not probed."""
    conn = session.conn
    assert isinstance(conn, drv.HttpConnection)
    headers = conn.base_headers()
    if session.stateless:
        headers["Mcp-Method"] = "server/discover"
    before = conn.answered()
    post = conn.request("POST", body, headers, {orc.idkey(pid)}, session.timeout, disconnect_at_event_id=True)
    if post.status is not None and post.status >= 500:
        return [orc.Violation("http-status", f"sse-disconnect-resume: POST answered {post.status}", "5xx")]
    if post.event_id is None or orc.idkey(pid) in conn.answered():
        return []  # no event id before the answer: nothing to resume
    hdrs = {k: v for k, v in conn.base_headers().items() if k != "Content-Type"}
    hdrs.update({"Accept": "text/event-stream", "Last-Event-ID": post.event_id})
    start = len(conn.received)
    ex = conn.request("GET", b"", hdrs, {orc.idkey(pid)}, session.timeout)
    out = []
    if ex.status is None or ex.status >= 500:
        out.append(
            orc.Violation(
                "http-status",
                f"GET resuming after event {post.event_id!r}: {ex.status or ex.error}",
                _get_detail(session, "resume"),
            )
        )
    foreign = [
        r.message
        for r in conn.received[start:]
        if isinstance(r.message, dict)
        and "method" not in r.message
        and r.message.get("id") is not None
        and orc.idkey(r.message["id"]) != orc.idkey(pid)
    ]
    if foreign:
        out.append(
            orc.Violation(
                "http-session",
                f"a resumed stream replayed a response of another stream: {orc._excerpt(foreign[0])}",
                "resume-foreign",
                **_no_streams(session),
            )
        )
    if ex.status == 200 and orc.idkey(pid) not in conn.answered() - before:
        out.append(
            orc.Violation(
                "http-session",
                f"the answer after event {post.event_id!r} was not replayed on the resumed stream",
                "resume-lost",
                severity="note",
            )
        )
    return out


HTTP_CASES = [
    *HTTP_PROBES,
    "delete-then-reuse",
    "truncated-body",
    "chunked-body",
    "wrong-method",
    "get-bad-last-event-id",
    "sse-disconnect-resume",
]
