"""The campaign runner: hypothesis generates cases, the oracles judge them, findings replay.

A campaign (``valid``, ``invalid``, ``lifecycle``, ``capabilities``, ``http``, and
``client`` and ``capabilities`` for a client target; ``stateful`` runs in
:mod:`.stateful`) runs in rounds.
Each round is one hypothesis run (``database=None``, seeded) over a live
session with the target; the first violation found sets the round's focus,
hypothesis shrinks the case while that violation persists (within a time
budget), and the smallest failing case is then replayed on a fresh session
(a new process, a new HTTP session).  Only a case that shows the violation
again becomes a finding; it is saved as a JSON transcript that
:func:`replay` (``mcp-trio fuzz replay FILE``) runs again.  The next round
ignores the violations already found, so one campaign can report several
(at most ``FuzzConfig.max_findings``).  A campaign the target cannot take (a
revision it does not speak) is skipped; one stopped by an error of the fuzzer
itself is marked aborted; the summary shows both.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis import strategies as st

from ..transports.http._headers import encode_value
from ..types import _versions
from . import driver as drv
from . import oracles as orc
from .strategies import Item, capability_cases, cases, stateless_meta, unadvertised_methods

__all__ = ["CAMPAIGNS", "Finding", "FuzzConfig", "Session", "load_transcript", "replay", "run"]

CAMPAIGNS = ("valid", "invalid", "lifecycle", "capabilities", "http", "stateful", "client")
TRANSCRIPT_FORMAT = "mcp-trio-fuzz-transcript/1"
_NAME_PARAM = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


class TargetError(Exception):
    """The target cannot be fuzzed at all (no answer to initialize, cannot start)."""


@dataclass
class FuzzConfig:
    target: Any  # drv.StdioTarget | drv.HttpTarget | client.ClientTarget
    revisions: Sequence[str] = (_versions.SUPPORTED_VERSIONS[1],)
    campaigns: Sequence[str] = ("valid", "invalid", "lifecycle")
    seed: int = 0
    max_examples: int | None = 100  # per campaign and revision
    time_budget: float | None = None  # seconds per campaign and revision (instead of max_examples)
    timeout: float = 5.0  # seconds to wait for the answers of one case
    shrink_time: float = 20.0  # seconds of shrinking per finding
    #: Findings per campaign and revision; the campaign stops there (the summary says so),
    #: since past a handful a target's findings are mostly the same bug again.
    max_findings: int = 5
    run_time: float = 30.0  # --client: seconds one client run may take before it counts as hung
    #: Fuzz a revision even when the target's initialize answer names another one
    #: (by default such a campaign is skipped: the target does not speak it).
    all_revisions: bool = False
    skip_probes: frozenset[str] = frozenset()  # probe kinds (Item notes, e.g. "deep_nesting") left out
    out_dir: Path | None = None
    progress: Callable[[str], None] = lambda line: None


@dataclass
class CaseResult:
    payloads: list[bytes]
    notes: list[str]
    violations: list[orc.Violation]
    events_from: int
    elapsed: float


@dataclass
class Finding:
    revision: str
    campaign: str
    violation: orc.Violation
    transcript: dict[str, Any]
    path: Path | None = None


# ---------------------------------------------------------------- session


#: Seconds a target gets to answer its first initialize (start-up included).
STARTUP_TIMEOUT = 30.0


class Session:
    """One session with the target, spoken raw: handshake, cases, pings."""

    def __init__(self, target: drv.StdioTarget | drv.HttpTarget, revision: str, *, handshake: bool = True,
                 timeout: float = 5.0) -> None:
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
        self.conn = target.open()
        self.stateless = _versions.is_stateless(revision)
        if self.stateless and isinstance(self.conn, drv.HttpConnection):
            self.conn.protocol_version = revision
        if handshake and not self.stateless:
            self._handshake()
        elif self.stateless:
            self.handshake_done = True

    def _handshake(self) -> None:
        answer = self.initialize()
        if answer is None or not isinstance(answer.get("result"), dict):
            self.close()
            raise TargetError(f"no valid answer to initialize within {max(self.timeout, STARTUP_TIMEOUT)} s")

    def initialize(self, version: str | None = None, capabilities: dict[str, Any] | None = None,
                   ) -> dict[str, Any] | None:
        """Send ``initialize`` (``version`` defaults to the session's revision) and, when it is answered
        with a result, ``notifications/initialized``; returns the answer (None when none came)."""
        self.counter += 1
        rid = f"fuzz-init-{self.counter}"
        init = {"jsonrpc": "2.0", "id": rid, "method": "initialize",
                "params": {"protocolVersion": version or self.revision, "capabilities": capabilities or {},
                           "clientInfo": {"name": "mcp-trio-fuzz", "version": "1"}}}
        start = len(self.conn.received)
        # A process may take a while to start (interpreters, a loaded machine): the first
        # answer gets STARTUP_TIMEOUT; every later one the campaign's timeout.
        self.conn.send([_dump(init)], want={orc.idkey(rid)}, timeout=max(self.timeout, STARTUP_TIMEOUT))
        answer = next((m for r in self.conn.received[start:] for m in _msgs(r.message)
                       if isinstance(m, dict) and m.get("id") == rid and "method" not in m), None)
        result = answer.get("result") if answer is not None else None
        if not isinstance(result, dict):
            return answer
        version = result.get("protocolVersion")
        if isinstance(version, str) and version in _versions.SUPPORTED_VERSIONS:
            self.negotiated = version
        self.server_capabilities = result.get("capabilities") or {}
        if isinstance(self.conn, drv.HttpConnection):
            self.conn.protocol_version = self.negotiated
        self.conn.send([b'{"jsonrpc":"2.0","method":"notifications/initialized"}'], want=set(),
                       timeout=self.timeout)
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
            if obj.get("method") == "notifications/cancelled" and isinstance(params, dict) and "requestId" in params:
                obj["params"] = {**params, "requestId": fresh(params["requestId"])}
            return obj

        out = []
        for n, it in enumerate(items):
            # equal ids stay equal within an item (a batch, a cancellation of the case's request)
            # and across deliberate duplicates; elsewhere they are made distinct
            group[0] = "dup" if it.note == "duplicate_id" else (int(it.tags[1]) if it.tags[:1] == ("cancels",) else n)
            out.append(it.raw if it.raw is not None else _dump(walk(it.obj)))
        return out

    def headers_for(self, payload: bytes) -> dict[str, str] | None:
        """The 2026-07-28 request headers that mirror the body (HTTP only)."""
        if not self.stateless or not isinstance(self.conn, drv.HttpConnection):
            return None
        try:
            msg = json.loads(payload)
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
        self.conn.send([body], want={orc.idkey(pid)}, timeout=max(self.timeout, STARTUP_TIMEOUT),
                       headers=[self.headers_for(body)])
        result = next((m.get("result") for r in self.conn.received[start:] for m in _msgs(r.message)
                       if isinstance(m, dict) and m.get("id") == pid), None)
        versions = result.get("supportedVersions") if isinstance(result, dict) else None
        if isinstance(result, dict) and isinstance(result.get("capabilities"), dict):
            self.server_capabilities = result["capabilities"]
        return isinstance(versions, list) and self.revision in versions

    def probe_message(self) -> tuple[str, bytes]:
        self.counter += 1
        pid = f"fuzz-probe-{self.counter}"
        if self.stateless:
            msg = {"jsonrpc": "2.0", "id": pid, "method": "server/discover",
                   "params": {"_meta": stateless_meta(self.revision)}}
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
        pid, probe = self.probe_message()
        headers = [self.headers_for(p) for p in [*payloads, probe]]
        conn.send([*payloads, probe], want=want | {orc.idkey(pid)}, timeout=self.timeout, headers=headers)
        if isinstance(conn, drv.StdioConnection):
            conn.drain(0.02)
            if orc.idkey(pid) not in conn.answered():
                conn.settle_exit(0.5)  # a silent peer may be on its way out: say so
        received = conn.received[recv_from:]
        probe_answered = orc.idkey(pid) in conn.answered()
        if isinstance(conn, drv.HttpConnection):
            mine = {h.index for h in conn.http[http_from:] if h.payload is not None and h.payload < len(payloads)}
            probe_ex = [h for h in conn.http[http_from:] if h.payload == len(payloads)]
            # over HTTP any answer below 500 shows the server alive (before a session exists,
            # a ping is refused with 400)
            probe_answered = probe_answered or any(h.status is not None and h.status < 500 for h in probe_ex)
            received = [r for r in received if r.http in mine]
        view = orc.CaseView(
            revision=self.negotiated, transport=conn.kind, payloads=list(payloads), received=received,
            http=[h for h in conn.http[http_from:] if h.payload is not None and h.payload < len(payloads)],
            junk=[j for j in conn.junk if any(r.data is j for r in received)],
            alive=conn.alive(), exit_code=conn.exit_code(), probe_id=pid,
            probe_answered=probe_answered, cancelled=cancelled,
            previously_answered=set(self.answered), initialized=self.handshake_done, timeout=self.timeout,
            capabilities=self.server_capabilities if self.judge_capabilities else None,
        )
        violations = orc.check(view)
        self.answered |= conn.answered()
        return CaseResult(list(payloads), list(notes), violations, events_from, time.monotonic() - started)


def _cancelled_ids(payload: bytes) -> set[str]:
    try:
        msg = json.loads(payload)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return set()
    out = set()
    for m in _msgs(msg):
        if isinstance(m, dict) and m.get("method") == "notifications/cancelled" and isinstance(m.get("params"), dict):
            out.add(orc.idkey(m["params"].get("requestId")))
    return out


def _msgs(message: Any) -> list[Any]:
    return message if isinstance(message, list) else [message]


def _dump(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


# ------------------------------------------------------------ HTTP layer

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
#: Probes whose expectation is good practice, not a MUST: a miss is reported as a note.
NOTE_PROBES = frozenset({"foreign-host"})
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
                out.append(orc.Violation("http-session", f"a request in a session ended by DELETE got "
                                         f"{again.status}, not 404", "deleted-session"))
        conn.session_id = None  # the session is over either way: start another
        session._handshake()
        return out
    if probe == "wrong-method":
        return _wrong_methods(session, body)
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
            raw = (f"POST {conn.target.path} HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Length: "
                   f"{len(body) + 50}\r\nConnection: close\r\n\r\n").encode() + body
        else:
            raw = (f"POST {conn.target.path} HTTP/1.1\r\nHost: {host}\r\n{extra}Transfer-Encoding: chunked"
                   f"\r\n\r\n{len(body):x}\r\n").encode() + body + b"\r\n0\r\n\r\n"
        ex = conn.request("POST", body, {}, {orc.idkey(pid)}, session.timeout, raw=raw)
        if ex.status is not None and ex.status >= 500:
            out.append(orc.Violation("http-status", f"{probe}: HTTP {ex.status}", "5xx"))
        if probe == "chunked-body" and ex.status != 200:
            out.append(orc.Violation("http-status", f"a chunked POST of a valid request got {ex.status}",
                                     "chunked"))
        return out
    changes, expected = HTTP_PROBES[probe]
    if probe in ("no-session-id", "unknown-session-id") and (conn.session_id is None or session.stateless):
        return out
    if probe == "bad-protocol-version" and session.stateless:
        return out
    hdrs = conn.base_headers()
    hdrs.update({"Mcp-Method": "ping"} if session.stateless else {})
    for k, v in changes.items():
        for existing in [h for h in hdrs if h.lower() == k.lower()]:
            del hdrs[existing]
        if v is not None:
            hdrs[k] = v
    if session.stateless:
        hdrs["Mcp-Method"] = "server/discover"
    ex = conn.request("POST", body, hdrs, {orc.idkey(pid)}, session.timeout)
    if ex.status is None:
        out.append(orc.Violation("http-status", f"{probe}: no HTTP answer ({ex.error})", "no-answer"))
    elif ex.status >= 500:
        out.append(orc.Violation("http-status", f"{probe}: HTTP {ex.status}", "5xx"))
    elif expected is not None and ex.status not in expected:
        out.append(orc.Violation("http-session", f"{probe}: HTTP {ex.status}, expected {sorted(expected)}",
                                 probe, severity="note" if probe in NOTE_PROBES else "violation"))
    return out


def _wrong_methods(session: Session, body: bytes) -> list[orc.Violation]:
    conn = session.conn
    assert isinstance(conn, drv.HttpConnection)
    out = []
    for method in WRONG_METHODS:
        ex = conn.request(method, body, conn.base_headers(), set(), session.timeout)
        if ex.status is None or not 400 <= ex.status < 500:
            out.append(orc.Violation("http-status", f"{method} answered {ex.status or ex.error} (want a 4xx, "
                                     "ideally 405)", "wrong-method"))
    return out


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
        out.append(orc.Violation("http-status", f"GET with an unknown Last-Event-ID: {ex.status or ex.error}",
                                 "last-event-id"))
    replayed = [r for r in conn.received[before:] if ex.status == 200 and isinstance(r.message, dict)
                and r.message.get("id") is not None and "method" not in r.message]
    if replayed:
        out.append(orc.Violation("http-session", "a GET with a Last-Event-ID the server never issued got "
                                 f"responses: {orc._excerpt(replayed[0].message)}", "last-event-id-replay"))
    return out


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
        out.append(orc.Violation("http-status", f"GET resuming after event {post.event_id!r}: "
                                 f"{ex.status or ex.error}", "resume"))
    foreign = [r.message for r in conn.received[start:] if isinstance(r.message, dict) and "method" not in r.message
               and r.message.get("id") is not None and orc.idkey(r.message["id"]) != orc.idkey(pid)]
    if foreign:
        out.append(orc.Violation("http-session", "a resumed stream replayed a response of another stream: "
                                 f"{orc._excerpt(foreign[0])}", "resume-foreign"))
    if ex.status == 200 and orc.idkey(pid) not in conn.answered() - before:
        out.append(orc.Violation("http-session", f"the answer after event {post.event_id!r} was not replayed on "
                                 "the resumed stream", "resume-lost", severity="note"))
    return out


HTTP_CASES = [*HTTP_PROBES, "delete-then-reuse", "truncated-body", "chunked-body", "wrong-method",
              "get-bad-last-event-id", "sse-disconnect-resume"]


# ------------------------------------------------------------------ runner


class _Found(Exception):
    pass


@dataclass
class CampaignStats:
    revision: str
    campaign: str
    examples: int = 0
    sessions: int = 0
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)
    not_reproduced: list[dict[str, Any]] = field(default_factory=list)
    skipped: str | None = None
    aborted: str | None = None  # the campaign stopped early on an error of its own
    capped: bool = False  # stopped at FuzzConfig.max_findings

    def to_json(self) -> dict[str, Any]:
        return {"revision": self.revision, "campaign": self.campaign, "examples": self.examples,
                "sessions": self.sessions, "seconds": round(self.seconds, 2),
                "findings": [{"key": f.violation.key, "message": f.violation.message,
                              "severity": f.violation.severity,
                              "transcript": str(f.path) if f.path else None} for f in self.findings],
                "not_reproduced": self.not_reproduced, **({"skipped": self.skipped} if self.skipped else {}),
                **({"aborted": self.aborted} if self.aborted else {}), **({"capped": True} if self.capped else {})}


def run(cfg: FuzzConfig) -> list[CampaignStats]:
    """Every campaign of ``cfg`` against every revision; writes the report when ``out_dir`` is set."""
    stats = []
    for revision in cfg.revisions:
        for campaign in cfg.campaigns:
            stats.append(run_campaign(cfg, revision, campaign))
    if cfg.out_dir is not None:
        write_report(cfg, stats)
    return stats


def run_campaign(cfg: FuzzConfig, revision: str, campaign: str) -> CampaignStats:
    stats = CampaignStats(revision, campaign)
    started = time.monotonic()
    skipped = _skip_reason(cfg, revision, campaign)
    if skipped:
        stats.skipped = skipped
        return stats
    try:
        _run_rounds(cfg, revision, campaign, stats, started)
    except TargetError as exc:
        stats.skipped = str(exc)
        cfg.progress(f"{revision} {campaign}: {exc}")
    except Exception as exc:  # a fuzzer that cannot go on must say so, not vanish from the report
        stats.aborted = f"{type(exc).__name__}: {exc}"
        cfg.progress(f"{revision} {campaign}: ABORTED: {stats.aborted}")
    finally:
        stats.seconds = time.monotonic() - started
    cfg.progress(f"{revision} {campaign}: done, {stats.examples} examples, {len(stats.findings)} findings "
                 f"in {stats.seconds:.1f} s")
    return stats


def _run_rounds(cfg: FuzzConfig, revision: str, campaign: str, stats: CampaignStats, started: float) -> None:
    if campaign == "stateful":
        from .stateful import run_stateful

        run_stateful(cfg, revision, stats)
        return
    if cfg.target.kind == "client":
        from . import client as cli

        hunt = cli.client_hunt(cfg, revision, stats, campaign)
    else:
        hunt = _server_hunt(cfg, revision, campaign, stats)
    try:
        _search(cfg, revision, campaign, stats, hunt, started)
    finally:
        hunt.reset()


def _skip_reason(cfg: FuzzConfig, revision: str, campaign: str) -> str | None:
    kind = cfg.target.kind
    if campaign == "client" and kind != "client":
        return "the client campaign is for --client targets only"
    if kind == "client" and campaign not in ("client", "capabilities"):
        return f"the {campaign} campaign is for servers"
    if kind == "client" and campaign == "capabilities" and _versions.is_stateless(revision):
        return (f"{revision}: the client capabilities campaign needs server-to-client requests, which "
                f"{revision} sends only inside InputRequiredResult; not written yet")
    if campaign == "http" and kind != "http":
        return "the http campaign needs an --http target"
    if campaign in ("lifecycle", "stateful") and _versions.is_stateless(revision):
        return f"{revision} has no initialize handshake"
    return None


@dataclass
class Hunt:
    """What a campaign plugs into :func:`_search`.

    ``execute(case)`` runs one example and returns (payloads, notes, violations);
    ``replay(payloads, notes)`` runs the smallest failing case again on a fresh
    session and returns (transcript, violations); ``reset()`` drops any live state.
    """

    strategy: st.SearchStrategy[Any]
    execute: Callable[[Any], tuple[list[bytes], list[str], list[orc.Violation]]]
    replay: Callable[[list[bytes], list[str]], tuple[dict[str, Any], list[orc.Violation]]]
    reset: Callable[[], None]


def _server_hunt(cfg: FuzzConfig, revision: str, campaign: str, stats: CampaignStats) -> Hunt:
    handshake = campaign != "lifecycle"
    fresh_each = campaign in ("lifecycle", "http")
    live: list[Session] = []

    def session() -> Session:
        if live and (fresh_each or not live[0].conn.alive()):
            live.pop().close()
        if not live:
            sess = Session(cfg.target, revision, handshake=handshake, timeout=cfg.timeout)
            live.append(sess)
            stats.sessions += 1
            if handshake and sess.negotiated != revision and not cfg.all_revisions:
                raise TargetError(f"the target does not speak {revision} (its initialize answer names "
                                  f"{sess.negotiated}); --all-revisions fuzzes it anyway")
            if sess.stateless and stats.sessions == 1 and not cfg.all_revisions and not sess.discovers():
                raise TargetError(f"the target does not speak {revision} (server/discover does not list "
                                  "it); --all-revisions fuzzes it anyway")
            if campaign == "capabilities":
                _learn_capabilities(sess)
        return live[0]

    def drop() -> None:
        while live:
            live.pop().close()

    if campaign == "http":
        strategy: st.SearchStrategy[Any] = st.lists(st.sampled_from(HTTP_CASES), min_size=1, max_size=3)
    elif campaign == "capabilities":
        try:  # (the strategy depends on what the target advertises: ask it first)
            strategy = capability_cases(revision, _capability_methods(session(), revision))
        except BaseException:
            drop()  # no Hunt owns the session yet
            raise
    else:
        strategy = cases(revision, campaign)
    if cfg.skip_probes:
        skip = cfg.skip_probes
        if campaign == "http":
            strategy = strategy.filter(lambda case: not skip.intersection(case))
        else:
            strategy = strategy.filter(lambda case: not any(i.note.split(":")[0] in skip or i.note in skip
                                                            for i in case))

    def execute(case: Any) -> tuple[list[bytes], list[str], list[orc.Violation]]:
        sess = session()
        if campaign == "http":
            violations = [v for probe in case for v in _http_case(sess, probe)]
            result = sess.run_case([])  # liveness
            return [p.encode() for p in case], list(case), violations + result.violations
        payloads = sess.renumber(case)
        result = sess.run_case(payloads, [i.note for i in case])
        return payloads, result.notes, result.violations

    def replay_best(payloads: list[bytes], notes: list[str]) -> tuple[dict[str, Any], list[orc.Violation]]:
        return _replay_payloads(cfg.target, revision, campaign, payloads, notes,  # type: ignore[arg-type]
                                cfg.timeout, seed=cfg.seed)

    return Hunt(strategy, execute, replay_best, drop)


def _learn_capabilities(sess: Session) -> None:
    """Make ``sess`` judge capability use: a handshake revision has the server's capabilities
    from ``initialize``; a stateless one asks ``server/discover`` for them."""
    sess.judge_capabilities = True
    if sess.stateless and not sess.server_capabilities:
        sess.discovers()


def _capability_methods(sess: Session, revision: str) -> list[str]:
    """What the ``capabilities`` campaign can send: requests the server's answer did not
    advertise, and notifications gated by client capabilities the fuzzer never declares
    (its handshake declares none)."""
    methods = unadvertised_methods(revision, sess.server_capabilities, {})
    if not methods:
        raise TargetError(f"the target advertises every capability {revision} gates: nothing to violate")
    return methods


def _search(cfg: FuzzConfig, revision: str, campaign: str, stats: CampaignStats, hunt: Hunt,
            started: float) -> None:
    """Rounds of hypothesis runs: find a new violation, shrink it, keep it if it replays."""
    found: set[str] = set()

    def budget_left() -> bool:
        elapsed = time.monotonic() - started
        if cfg.time_budget is not None:
            return elapsed < cfg.time_budget
        return stats.examples < (cfg.max_examples or 0)

    round_no = 0
    while budget_left() and len(stats.findings) < cfg.max_findings and round_no < 50:
        round_no += 1
        focus: list[str] = []
        best: list[Any] = []  # [case, payloads, notes]
        shrink_started: list[float] = []
        errors: list[BaseException] = []
        chunk = 25 if cfg.time_budget is not None else max(1, (cfg.max_examples or 0) - stats.examples)

        @settings(database=None, max_examples=chunk, deadline=None, derandomize=False,
                  suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet,
                  phases=[Phase.generate, Phase.shrink], report_multiple_bugs=False)
        @seed(cfg.seed * 1000 + round_no)
        @given(hunt.strategy)
        def test(case: Any) -> None:
            if errors:  # the campaign is over: let hypothesis finish without running anything
                raise _Found
            if best and shrink_started and time.monotonic() - shrink_started[0] > cfg.shrink_time:
                if case == best[0]:
                    raise _Found
                return
            if not focus and not budget_left():
                return
            if not focus:
                stats.examples += 1
                if stats.examples % 25 == 0:
                    cfg.progress(f"{revision} {campaign}: {stats.examples} examples, "
                                 f"{len(stats.findings)} findings")
            try:
                payloads, notes, violations = hunt.execute(case)
            except Exception as exc:  # no session at all, or the fuzzer's own failure: stop, visibly
                errors.append(exc)
                raise _Found from exc
            keys = {v.key for v in violations} - found
            if keys:
                hunt.reset()  # a failure may leave state behind: start the next example afresh
            if not focus and keys:
                focus.append(sorted(keys)[0])
                shrink_started.append(time.monotonic())
                cfg.progress(f"{revision} {campaign}: violation {focus[0]}; shrinking")
            if focus and focus[0] in keys:
                if not best or _size(payloads) <= _size(best[1]):
                    best[:] = [case, payloads, notes]
                raise _Found

        try:
            test()
        except Exception:  # _Found (or hypothesis' flaky report): the case is in ``best``
            pass
        if errors:
            raise errors[0]
        if not focus:
            continue
        found.add(focus[0])
        hunt.reset()
        transcript, violations = hunt.replay(best[1], best[2])
        keep_if_replayed(cfg, stats, revision, campaign, focus[0], violations, len(best[1]),
                         lambda transcript=transcript: transcript)
    if len(stats.findings) >= cfg.max_findings:
        stats.capped = True


def keep_if_replayed(cfg: FuzzConfig, stats: CampaignStats, revision: str, campaign: str, key: str,
                     violations: Sequence[orc.Violation], size: int,
                     transcript: Callable[[], dict[str, Any]]) -> None:
    """Report ``key`` only if the replay's ``violations`` show it again (saving the
    ``transcript()`` of the replay); otherwise count it as not reproduced."""
    hit = next((v for v in violations if v.key == key), None)
    if hit is None:
        stats.not_reproduced.append({"key": key, "payloads": size})
        cfg.progress(f"{revision} {campaign}: {key} did not reproduce on replay; dropped")
        return
    finding = Finding(revision, campaign, hit, transcript())
    if cfg.out_dir is not None:
        finding.path = save_transcript(cfg.out_dir, finding, len(stats.findings) + 1)
    stats.findings.append(finding)
    cfg.progress(f"{revision} {campaign}: FINDING {hit.key}: {hit.message}")


def violations_found(stats: Sequence[CampaignStats]) -> bool:
    """Whether any finding is a violation (notes alone do not fail a run)."""
    return any(f.violation.severity != "note" for s in stats for f in s.findings)


def _size(payloads: Sequence[bytes]) -> tuple[int, int]:
    return len(payloads), sum(len(p) for p in payloads)


# ------------------------------------------------------------ transcripts


def _replay_payloads(target: drv.StdioTarget | drv.HttpTarget, revision: str, campaign: str,
                     payloads: Sequence[bytes], notes: Sequence[str], timeout: float,
                     seed: int | None = None) -> tuple[dict[str, Any], list[orc.Violation]]:
    sess = Session(target, revision, handshake=campaign != "lifecycle", timeout=timeout)
    try:
        if campaign == "capabilities":
            _learn_capabilities(sess)
        if campaign == "http":
            violations = [v for probe in notes for v in _http_case(sess, probe)]
            violations += sess.run_case([]).violations
        else:
            violations = sess.run_case(list(payloads), list(notes)).violations
    finally:
        sess.close()
    conn = sess.conn
    transcript = {
        "format": TRANSCRIPT_FORMAT,
        "target": target.describe(),
        "revision": revision,
        "negotiated": sess.negotiated,
        "campaign": campaign,
        "handshake": campaign != "lifecycle",
        **({"server_capabilities": sess.server_capabilities} if campaign == "capabilities" else {}),
        "timeout": timeout,
        **({"seed": seed} if seed is not None else {}),
        "case": [{**drv.encode_bytes(p), "note": n} for p, n in zip(payloads, [*notes, *[""] * len(payloads)],
                                                                       strict=False)],
        "violations": [v.to_json() for v in violations],
        "events": conn.events,
        "exit_code": conn.exit_code(),
        "stderr": conn.stderr_tail()[-4000:],
    }
    return transcript, violations


def stateful_transcript(cfg: FuzzConfig, revision: str, steps: list[dict[str, Any]],
                        violations: list[orc.Violation], runner: Any) -> dict[str, Any]:
    """The transcript of a replayed state-machine run: its steps instead of one case."""
    return {
        "format": TRANSCRIPT_FORMAT, "target": cfg.target.describe(), "revision": revision,
        "campaign": "stateful", "timeout": cfg.timeout, "seed": cfg.seed, "steps": steps, "case": [],
        "violations": [v.to_json() for v in violations], "events": runner.events,
    }


def save_transcript(out_dir: Path, finding: Finding, n: int) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() else "-" for c in finding.violation.key).strip("-")
    path = out_dir / f"finding-{finding.revision}-{finding.campaign}-{n:02d}-{safe}.json"
    data = {**finding.transcript, "finding": finding.violation.to_json()}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return path


def load_transcript(path: str | Path) -> dict[str, Any]:
    data = json.loads(Path(path).read_text())
    if data.get("format") != TRANSCRIPT_FORMAT:
        raise ValueError(f"{path} is not a {TRANSCRIPT_FORMAT} transcript")
    return data


def target_from(description: dict[str, Any]) -> drv.StdioTarget | drv.HttpTarget:
    if description.get("kind") == "stdio":
        return drv.StdioTarget(description["command"], cwd=description.get("cwd"))
    if description.get("kind") == "http":
        return drv.HttpTarget(description["url"])
    if description.get("kind") == "client":
        from .client import ClientTarget

        return ClientTarget.from_description(description)
    raise ValueError(f"unknown target {description!r}")


def replay(path: str | Path, *, target: drv.StdioTarget | drv.HttpTarget | None = None,
           timeout: float | None = None) -> tuple[dict[str, Any], list[orc.Violation]]:
    """Send a transcript's case again on a fresh session; (new transcript, violations)."""
    data = load_transcript(path)
    if data.get("campaign") == "client" or data.get("target", {}).get("kind") == "client":
        from . import client as cli

        return cli.replay_client(data, target=target, timeout=timeout)
    if data.get("campaign") == "stateful":
        from .stateful import run_steps

        cfg = FuzzConfig(target or target_from(data["target"]), timeout=timeout or data.get("timeout", 5.0))
        violations, runner = run_steps(cfg.target, data["revision"], data["steps"], cfg.timeout)
        return stateful_transcript(cfg, data["revision"], data["steps"], violations, runner), violations
    payloads = [drv.decode_bytes(c) for c in data["case"]]
    notes = [c.get("note", "") for c in data["case"]]
    return _replay_payloads(target or target_from(data["target"]), data["revision"], data["campaign"],
                            payloads, notes, timeout or data.get("timeout", 5.0))


def write_report(cfg: FuzzConfig, stats: Sequence[CampaignStats]) -> None:
    assert cfg.out_dir is not None
    cfg.out_dir.mkdir(parents=True, exist_ok=True)
    report = {
        "format": "mcp-trio-fuzz-report/1",
        "target": cfg.target.describe(),
        "seed": cfg.seed,
        "max_examples": cfg.max_examples,
        "time_budget": cfg.time_budget,
        "campaigns": [s.to_json() for s in stats],
        "oracles": {name: {"rule": o.rule, "spec": o.spec, "source": o.source} for name, o in orc.ORACLES.items()},
    }
    (cfg.out_dir / "report.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    (cfg.out_dir / "summary.txt").write_text(summary(cfg, stats))


def summary(cfg: FuzzConfig, stats: Sequence[CampaignStats]) -> str:
    lines = [f"mcp-trio fuzz: {json.dumps(cfg.target.describe())}, seed {cfg.seed}", ""]
    total = 0
    for s in stats:
        status = f"skipped ({s.skipped})" if s.skipped else (
            f"{s.examples} examples, {s.sessions} sessions, {s.seconds:.1f} s, {len(s.findings)} findings")
        lines.append(f"{s.revision}  {s.campaign:<10} {status}")
        if s.aborted:
            lines.append(f"    ! ABORTED after {s.examples} examples: {s.aborted}")
        if s.capped:
            lines.append(f"    ! stopped at {cfg.max_findings} findings (--max-findings); more may remain")
        for f in s.findings:
            total += 1
            grade = " (note)" if f.violation.severity == "note" else ""
            lines.append(f"    - {f.violation.key}{grade}: {f.violation.message}")
            lines.append(f"      replay: mcp-trio fuzz replay {f.path}" if f.path else "")
        for nr in s.not_reproduced:
            lines.append(f"    ~ {nr['key']}: seen, did not reproduce on replay (not reported)")
    notes = sum(1 for s in stats for f in s.findings if f.violation.severity == "note")
    lines += ["", f"{total} finding(s)" + (f", {notes} of them notes (judgement calls, not violations)."
                                           if notes else ".")]
    return "\n".join(line for line in lines if line is not None) + "\n"
