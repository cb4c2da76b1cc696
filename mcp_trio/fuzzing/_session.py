"""One raw session with a server target: the handshake, cases sent as bytes, and the judging.

:class:`Session` opens a connection (:mod:`.driver`), does the ``initialize`` handshake (or,
in a stateless revision, none; ``server/discover`` tells whether the target speaks it), gives
a case's request ids fresh values, sends it with a ping behind it and has the oracles judge
what came back (:meth:`Session.run_case`).  The server campaigns, the HTTP probes and the
state machine all speak through it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..transports.http._headers import encode_value
from ..types import _versions
from . import driver as drv
from . import oracles as orc
from ._findings import TargetDown, TargetError
from .strategies import Item, stateless_meta

__all__ = ["CaseResult", "Session"]

_NAME_PARAM = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


@dataclass
class CaseResult:
    payloads: list[bytes]
    notes: list[str]
    violations: list[orc.Violation]
    events_from: int
    elapsed: float


#: Seconds a target gets to answer its first initialize (start-up included).
STARTUP_TIMEOUT = 30.0


class Session:
    """One session with the target, spoken raw: handshake, cases, pings."""

    def __init__(
        self,
        target: drv.StdioTarget | drv.HttpTarget,
        revision: str,
        *,
        handshake: bool = True,
        timeout: float = 5.0,
    ) -> None:
        self.target = target
        self.revision = revision
        self.negotiated = revision
        self.timeout = timeout
        self.handshake_done = False
        self.server_capabilities: dict[str, Any] = {}
        #: Judge the answers to requests for capabilities the server did not advertise
        #: (the ``capabilities`` campaign; the capabilities oracle).
        self.judge_capabilities = False
        self.counter = 0
        self.answered: set[str] = set()
        #: Stdio: once the ping behind a case is answered, the answers still missing get this many
        #: seconds more instead of the rest of the timeout (None: the whole timeout).
        self.grace: float | None = None
        #: The ping behind the last case got no answer (or the process died): the session is
        #: spent, a campaign starts another.
        self.wedged = False
        #: Ids of earlier cases' requests that got no answer in their case: an answer arriving
        #: later is not judged again (it was judged missing) nor counted as an unknown id.
        self.late: set[str] = set()
        try:
            self.conn = target.open()
        except OSError as exc:
            raise TargetDown(f"the target cannot start: {exc}") from exc
        self.stateless = _versions.is_stateless(revision)
        if self.stateless and isinstance(self.conn, drv.HttpConnection):
            self.conn.protocol_version = revision
        if handshake and not self.stateless:
            self._handshake()
        elif self.stateless:
            self.handshake_done = True

    def _handshake(self) -> None:
        answer = self.initialize()
        if answer is None:
            self.close()
            raise TargetDown(f"the target gave no answer to initialize: {self.why_silent()}")
        if not isinstance(answer.get("result"), dict):
            self.close()
            raise TargetError(f"initialize was refused: {orc._excerpt(answer)}")

    def why_silent(self) -> str:
        """Why the target said nothing: it exited (status and stderr), it could not be reached
        (the HTTP error), or it stayed silent for the start-up time."""
        conn = self.conn
        tail = conn.stderr_tail().strip()[-800:]
        said = f"; its stderr ends: {tail}" if tail else ""
        if not conn.alive():
            return f"it exited with status {conn.exit_code()}{said}"
        errors = [h.error for h in conn.http if h.error]
        if isinstance(conn, drv.HttpConnection) and errors:
            return f"{conn.target.url}: {errors[-1]}"
        return f"no answer within {max(self.timeout, STARTUP_TIMEOUT)} s{said}"

    def initialize(
        self,
        version: str | None = None,
        capabilities: dict[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """Send ``initialize`` (``version`` defaults to the session's revision) and, when it is answered
        with a result, ``notifications/initialized``; returns the answer (None when none came)."""
        self.counter += 1
        rid = f"fuzz-init-{self.counter}"
        init = {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "initialize",
            "params": {
                "protocolVersion": version or self.revision,
                "capabilities": capabilities or {},
                "clientInfo": {"name": "mcp-trio-fuzz", "version": "1"},
            },
        }
        start = len(self.conn.received)
        # A process may take a while to start (interpreters, a loaded machine): the first
        # answer gets STARTUP_TIMEOUT; every later one the campaign's timeout.
        self.conn.send([_dump(init)], want={orc.idkey(rid)}, timeout=max(self.timeout, STARTUP_TIMEOUT))
        answer = next(
            (
                m
                for r in self.conn.received[start:]
                for m in _msgs(r.message)
                if isinstance(m, dict) and m.get("id") == rid and "method" not in m
            ),
            None,
        )
        result = answer.get("result") if answer is not None else None
        if not isinstance(result, dict):
            return answer
        version = result.get("protocolVersion")
        if isinstance(version, str) and version in _versions.SUPPORTED_VERSIONS:
            self.negotiated = version
        self.server_capabilities = result.get("capabilities") or {}
        if isinstance(self.conn, drv.HttpConnection):
            self.conn.protocol_version = self.negotiated
        initialized = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
        if isinstance(self.conn, drv.StdioConnection):
            # A ping behind it, answered before the first case: whatever the peer says to the
            # handshake (even an unasked answer to the notification) is read here, never
            # counted against the case that follows.
            sync = f"fuzz-init-{self.counter}-sync"
            ping = _dump({"jsonrpc": "2.0", "id": sync, "method": "ping"})
            self.conn.send([initialized, ping], want={orc.idkey(sync)}, timeout=self.timeout)
        else:
            self.conn.send([initialized], want=set(), timeout=self.timeout)
        self.handshake_done = True
        return answer

    def close(self) -> None:
        self.conn.close()

    def renumber(self, items: Sequence[Item]) -> list[bytes]:
        """Give the case's ids fresh values (equal ids stay equal) and encode it."""
        mapping: dict[tuple[Any, str], Any] = {}
        group: list[Any] = [None]

        def fresh(value: Any) -> Any:
            if isinstance(value, bool) or not orc._valid_id(value):
                return value
            key = (group[0], orc.idkey(value))
            if key not in mapping:
                self.counter += 1
                mapping[key] = 100_000 + self.counter if isinstance(value, int) else f"{value}~{self.counter}"
            return mapping[key]

        def walk(obj: Any) -> Any:
            if isinstance(obj, list):
                return [walk(o) for o in obj]
            if not isinstance(obj, dict):
                return obj
            obj = dict(obj)
            if "id" in obj and "method" in obj:
                obj["id"] = fresh(obj["id"])
            params = obj.get("params")
            if (
                obj.get("method") == "notifications/cancelled"
                and isinstance(params, dict)
                and "requestId" in params
            ):
                obj["params"] = {**params, "requestId": fresh(params["requestId"])}
            return obj

        out = []
        for n, it in enumerate(items):
            # equal ids stay equal within an item (a batch, a cancellation of the case's request)
            # and across deliberate duplicates; elsewhere they are made distinct
            group[0] = (
                "dup"
                if it.note == "duplicate_id"
                else (int(it.tags[1]) if it.tags[:1] == ("cancels",) else n)
            )
            out.append(it.raw if it.raw is not None else _dump(walk(it.obj)))
        return out

    def headers_for(self, payload: bytes) -> dict[str, str] | None:
        """The 2026-07-28 request headers that mirror the body (HTTP only)."""
        if not self.stateless or not isinstance(self.conn, drv.HttpConnection):
            return None
        try:
            msg = drv.loads(payload)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return None
        if not isinstance(msg, dict) or not isinstance(msg.get("method"), str):
            return None
        try:
            headers = {"Mcp-Method": encode_value(msg["method"])}
            params = msg.get("params")
            name = _NAME_PARAM.get(msg["method"])
            if name and isinstance(params, dict) and isinstance(params.get(name), str):
                headers["Mcp-Name"] = encode_value(params[name])
        except UnicodeEncodeError:  # a lone surrogate (from a \ud800 escape) has no header form
            return None
        return headers

    def discovers(self) -> bool:
        """Stateless revisions: whether ``server/discover`` lists the session's revision."""
        pid, body = self.probe_message()
        start = len(self.conn.received)
        self.conn.send(
            [body],
            want={orc.idkey(pid)},
            timeout=max(self.timeout, STARTUP_TIMEOUT),
            headers=[self.headers_for(body)],
        )
        result = next(
            (
                m.get("result")
                for r in self.conn.received[start:]
                for m in _msgs(r.message)
                if isinstance(m, dict) and m.get("id") == pid
            ),
            None,
        )
        versions = result.get("supportedVersions") if isinstance(result, dict) else None
        if isinstance(result, dict) and isinstance(result.get("capabilities"), dict):
            self.server_capabilities = result["capabilities"]
        return isinstance(versions, list) and self.revision in versions

    def probe_message(self) -> tuple[str, bytes]:
        self.counter += 1
        pid = f"fuzz-probe-{self.counter}"
        if self.stateless:
            msg = {
                "jsonrpc": "2.0",
                "id": pid,
                "method": "server/discover",
                "params": {"_meta": stateless_meta(self.revision)},
            }
        else:
            msg = {"jsonrpc": "2.0", "id": pid, "method": "ping"}
        return pid, _dump(msg)

    def run_case(self, payloads: Sequence[bytes], notes: Sequence[str] = ()) -> CaseResult:
        started = time.monotonic()
        conn = self.conn
        events_from, recv_from, http_from = len(conn.events), len(conn.received), len(conn.http)
        want: set[str] = set()
        cancelled: set[str] = set()
        for p in payloads:
            e = orc.classify_payload(p, self.negotiated, conn.kind, initialized=self.handshake_done)
            want |= {k for k, x in e.ids.items() if x.count and not x.lenient}
            cancelled |= _cancelled_ids(p)
        want -= cancelled
        self.answered |= conn.answered()  # (the handshake's answers too: a second one is an extra)
        pid, probe = self.probe_message()
        headers = [self.headers_for(p) for p in [*payloads, probe]]
        # Without a handshake (the lifecycle campaign) the first case is the process's first input:
        # it gets the start-up time of the handshake before its first message, the timeout after.
        startup = 0.0 if conn.received else max(self.timeout, STARTUP_TIMEOUT)
        eager = self.grace is not None and isinstance(conn, drv.StdioConnection)
        conn.send(
            [*payloads, probe],
            want={orc.idkey(pid)} if eager else want | {orc.idkey(pid)},
            timeout=self.timeout,
            headers=headers,
            startup=startup,
        )
        if eager and self.grace is not None and orc.idkey(pid) in conn.answered():
            left = self.timeout - (time.monotonic() - started)
            conn.wait(want, max(0.0, min(self.grace, left)))
        if isinstance(conn, drv.StdioConnection):
            conn.drain(0.02)
            if orc.idkey(pid) not in conn.answered():
                conn.settle_exit(0.5)  # a silent peer may be on its way out: say so
        received = [r for r in conn.received[recv_from:] if not self._late(r.message)]
        probe_answered = orc.idkey(pid) in conn.answered()
        if isinstance(conn, drv.HttpConnection):
            mine = {
                h.index for h in conn.http[http_from:] if h.payload is not None and h.payload < len(payloads)
            }
            probe_ex = [h for h in conn.http[http_from:] if h.payload == len(payloads)]
            # over HTTP any answer below 500 shows the server alive (before a session exists,
            # a ping is refused with 400)
            probe_answered = probe_answered or any(h.status is not None and h.status < 500 for h in probe_ex)
            received = [r for r in received if r.http in mine]
        view = orc.CaseView(
            revision=self.negotiated,
            transport=conn.kind,
            payloads=list(payloads),
            received=received,
            http=[h for h in conn.http[http_from:] if h.payload is not None and h.payload < len(payloads)],
            junk=[j for j in conn.junk if any(r.data is j for r in received)],
            alive=conn.alive(),
            exit_code=conn.exit_code(),
            probe_id=pid,
            probe_answered=probe_answered,
            cancelled=cancelled,
            previously_answered=set(self.answered),
            initialized=self.handshake_done,
            timeout=self.timeout,
            capabilities=self.server_capabilities if self.judge_capabilities else None,
        )
        violations = orc.check(view)
        if isinstance(conn, drv.HttpConnection) and view.alive:
            violations += self._wedged(conn, pid, http_from, len(payloads))
        self.answered |= conn.answered()
        self.late |= want - self.answered
        self.wedged = not view.alive or not probe_answered
        return CaseResult(list(payloads), list(notes), violations, events_from, time.monotonic() - started)

    def _late(self, message: Any) -> bool:
        """An answer to a request of an earlier case that was judged missing there."""
        return (
            isinstance(message, dict)
            and "method" not in message
            and message.get("id") is not None
            and orc.idkey(message["id"]) in self.late
        )

    def _wedged(self, conn: drv.HttpConnection, pid: str, http_from: int, probe: int) -> list[orc.Violation]:
        """The session is wedged when the valid request sent after the case (ping, or
        ``server/discover``) got a 2xx without its answer, or a 4xx other than 404 (which says
        the server ended the session, as it MAY), in a session that was up."""
        if orc.idkey(pid) in conn.answered() or not self.handshake_done:
            return []
        if conn.session_id is None and not self.stateless:
            return []
        statuses = [h.status for h in conn.http[http_from:] if h.payload == probe and h.status is not None]
        bad = [s for s in statuses if 200 <= s < 300 or (400 <= s < 500 and s != 404)]
        if not bad:
            return []
        return [
            orc.Violation(
                "alive",
                f"the session is wedged: the valid request sent after the case got HTTP {bad[0]} "
                "without an answer",
                "wedged",
            )
        ]


def _cancelled_ids(payload: bytes) -> set[str]:
    try:
        msg = drv.loads(payload)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return set()
    out = set()
    for m in _msgs(msg):
        if (
            isinstance(m, dict)
            and m.get("method") == "notifications/cancelled"
            and isinstance(m.get("params"), dict)
        ):
            out.add(orc.idkey(m["params"].get("requestId")))
    return out


def _msgs(message: Any) -> list[Any]:
    return message if isinstance(message, list) else [message]


def _dump(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
