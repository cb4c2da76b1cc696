"""What the Streamable HTTP endpoint does with a request, decided without I/O.

:class:`~mcp_trio.transports.http.StreamableHTTP` decides nothing itself: it
asks this module what a request calls for, then carries the answer out
(starts a session, hands the body to it, streams the answer).  Everything
here is synchronous and touches nothing but its arguments: a request's
method, headers and peeked body in; a :class:`PostPlan` or the :class:`_Reply`
refusing the request out.  The rules' tests are in
``tests/transports/http/test_planner.py``; the endpoint's tests check that
it follows the plans.

Rules for every request:

* ``POST`` is served; ``GET`` and ``DELETE`` too, unless the endpoint is
  stateless (405, ``Allow: POST``); any other method: 405.
* ``GET`` lists ``text/event-stream`` in ``Accept`` (406).  It attaches to
  the session's stream for messages unrelated to any request, or with
  ``Last-Event-ID`` resumes the stream that event was sent on
  (:func:`stream_key`); a stream already attached: 409 (the endpoint).
* A request naming a session (every one but those below that open one):
  ``MCP-Protocol-Version``, when present, must name a supported revision
  (400); ``Mcp-Session-Id`` must be present (400).  A session unknown,
  ended, or opened by another principal is answered 404 by the endpoint.

Rules for a ``POST``, in the order they apply:

1. ``Accept`` lists ``application/json`` and ``text/event-stream`` (or
   ``*/*``): 406 otherwise.  The body is JSON (415, 413, 400 -32700: the
   endpoint's ``_json_body``).
2. An empty batch: 400.  A member that is not a request, notification or
   response: 400 -32600.
3. One request naming a stateless revision in ``_meta`` (2026-07-28) carries
   headers matching its body (``Mcp-Method``, ``Mcp-Name``,
   ``Mcp-Param-*``): 400 with -32020 and its id otherwise.
4. Where the request goes (:attr:`PostPlan.target`):

   * ``"modern"``: one request of a stateless revision (in ``_meta``, or
     only in the ``MCP-Protocol-Version`` header) without
     ``Mcp-Session-Id``: a session of its own at that version;
   * ``"stateless"`` (a stateless endpoint): the header's version must be
     supported (400); nothing but notifications and responses: 202, dropped;
     ``initialize`` in a batch: 400; a batch in a revision without batches:
     400; otherwise a session of its own, as if initialized at the header's
     version (2025-03-26 without one), ``initialize`` at none;
   * ``"initialize"``: ``initialize`` alone (in a batch: 400) opens a
     session, once the session table has room (429 / 503 otherwise);
   * ``"session"``: anything else goes to the session it names (see above);
     a batch in that session's revision, when it has no batches: 400.

Once the session is known (:func:`plan_answer`):

5. ``notifications/cancelled`` members end the streams of the requests they
   cancel (:meth:`PostPlan.cancelled`).
6. Nothing but notifications and responses: 202 once the body is handed over.
7. Two requests of the batch sharing an id: 400; an id still in progress in
   the session: 400; ``max_streams`` POST streams already pending: 429.
8. The revision the answer is framed in: the stateless one of ``_meta``, else
   the one ``initialize`` asks for, else the session's negotiated one (it
   decides, whatever the header says), else the header's, else 2025-03-26.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Container, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .... import _jsonrpc as rpc
from ....types import _versions
from .._headers import Annotations, check_request_headers
from .._replies import _BatchMember, _error_reply, _Message, _modern_version, _refuse_batch, _Reply

if TYPE_CHECKING:
    from .._request import HttpRequest

DEFAULT_VERSION = "2025-03-26"  # assumed when MCP-Protocol-Version is absent
HEADER_VERSION = "mcp-protocol-version"
HEADER_SESSION = "mcp-session-id"

Target = Literal["modern", "stateless", "initialize", "session"]
Peeked = _Message | list[_BatchMember]


def refuse_method(method: str, stateless: bool) -> _Reply | None:
    """405 for a method the endpoint does not serve; ``None`` for one it does."""
    if method == "POST":
        return None
    if stateless and method in ("GET", "DELETE"):
        return _Reply(405, headers=[("allow", "POST")])
    if method in ("GET", "DELETE"):
        return None
    return _Reply(405, headers=[("allow", "GET, POST, DELETE")])


def session_id_of(headers: Mapping[str, str], versions: Container[str]) -> str | _Reply:
    """The session a request names, or the reply refusing it (an unsupported version, no id)."""
    problem = refuse_version(headers, versions)
    if problem is not None:
        return problem
    session_id = headers.get(HEADER_SESSION)
    if session_id is None:
        return _error_reply(400, "Bad Request: Mcp-Session-Id header is required")
    return session_id


def refuse_version(headers: Mapping[str, str], versions: Container[str]) -> _Reply | None:
    version = headers.get(HEADER_VERSION)
    if version is not None and version not in versions:
        return _error_reply(400, f"Unsupported MCP-Protocol-Version: {version!r}")
    return None


def refuse_accept(headers: Mapping[str, str]) -> _Reply | None:
    """406 for a POST whose ``Accept`` does not list both answers' media types (rule 1)."""
    accept = headers.get("accept", "")
    if "*/*" in accept or ("application/json" in accept and "text/event-stream" in accept):
        return None
    return _error_reply(406, "Not Acceptable: Accept must list application/json and text/event-stream")


def refuse_get_accept(headers: Mapping[str, str]) -> _Reply | None:
    """406 for a ``GET`` whose ``Accept`` does not list ``text/event-stream``."""
    if "text/event-stream" in headers.get("accept", ""):
        return None
    return _error_reply(406, "Not Acceptable: Accept must list text/event-stream")


def stream_key(last_event_id: str | None) -> str:
    """The stream a ``GET`` attaches to: the one ``Last-Event-ID`` names (event
    ids are ``<stream>.<n>``), without one the session's own (``"0"``)."""
    return last_event_id.partition(".")[0] if last_event_id else "0"


def messages_of(peeked: Peeked) -> list[_Message | _BatchMember] | _Reply:
    """The messages of a body, or 400 for an empty batch (rule 2)."""
    messages: list[_Message | _BatchMember] = [*peeked] if isinstance(peeked, list) else [peeked]
    return messages or _error_reply(400, "Invalid Request: empty batch")


@dataclass(slots=True, eq=False)
class PostPlan:
    """What a ``POST`` calls for (rules 2-4), before its session is known."""

    target: Target
    peeked: Peeked
    messages: list[_Message | _BatchMember]
    #: Its requests (the members that are).
    requests: list[_Message | _BatchMember]
    is_initialize: bool
    #: The stateless revision its one request names in ``_meta``.
    modern_version: str | None
    #: ``MCP-Protocol-Version``.
    header_version: str | None
    #: ``"modern"``: the session's version; ``"stateless"``: the version it is
    #: served at as if initialized (``None`` for ``initialize``).
    version: str | None = None

    def cancelled(self) -> list[Any]:
        """The ids of the requests its ``notifications/cancelled`` members cancel (rule 5)."""
        return [
            m.params.get("requestId")
            for m in self.messages
            if m.method == "notifications/cancelled" and isinstance(m.params, dict)
        ]

    def refuse_batch(self, session_version: str | None) -> _Reply | None:
        """400 for a batch in a session whose revision has none (rule 4, ``"session"``)."""
        return _refuse_batch(self.peeked, session_version)

    def init_params(self) -> dict[str, Any] | None:
        """``initialize``'s params (``"initialize"`` plans)."""
        params = self.requests[0].params if self.is_initialize else None
        return params if isinstance(params, dict) else None


def plan_post(
    request: HttpRequest,
    peeked: Peeked,
    messages: list[_Message | _BatchMember],
    kinds: list[str],
    *,
    versions: Container[str],
    stateless: bool,
    tool_headers: Callable[[str], Annotations | None] | None,
) -> PostPlan | _Reply:
    """Where a ``POST`` goes (rules 2-4), or the reply refusing it; ``kinds``
    are the messages' (:attr:`_Message.kind`)."""
    if "invalid" in kinds:
        return _error_reply(400, "Invalid Request: not a JSON-RPC request, notification or response")
    headers = request.headers
    requests = [m for m, kind in zip(messages, kinds, strict=True) if kind == "request"]
    is_initialize = any([m.method == "initialize" for m in requests])
    single = len(messages) == 1 and len(requests) == 1
    modern_version = _modern_version(requests[0]) if single else None
    header_version = headers.get(HEADER_VERSION)
    # A stateless request names its version in _meta; one that names a
    # stateless version only in the header is a stateless request with bad _meta.
    modern = modern_version is not None or (
        single and header_version is not None and _versions.is_stateless(header_version)
    )
    if modern_version is not None:
        first = requests[0]
        mismatch = check_request_headers(headers, first.method, first.params, modern_version, tool_headers)
        if mismatch is not None:
            return _error_reply(400, f"Header mismatch: {mismatch}", code=rpc.HEADER_MISMATCH, id=first.id)
    plan = PostPlan("session", peeked, messages, requests, is_initialize, modern_version, header_version)
    if modern and HEADER_SESSION not in headers:
        plan.target, plan.version = "modern", modern_version or header_version
    elif stateless:
        problem = refuse_version(headers, versions)
        if problem is not None:
            return problem
        if not requests:
            return _Reply(202)  # no session: nothing can be waiting for them
        if is_initialize and len(messages) > 1:
            return _error_reply(400, "Invalid Request: initialize must not be part of a batch")
        plan.target, plan.version = "stateless", None if is_initialize else header_version or DEFAULT_VERSION
        refused = plan.refuse_batch(plan.version)
        if refused is not None:
            return refused
    elif is_initialize:
        if len(messages) > 1:
            return _error_reply(400, "Invalid Request: initialize must not be part of a batch")
        plan.target = "initialize"
    return plan


def plan_answer(
    plan: PostPlan,
    *,
    session_version: str | None,
    in_progress: Collection[Any],
    pending_streams: int,
    max_streams: int,
) -> object:
    """For a ``POST`` with requests, once its session is known: the revision
    its answer is framed in (a string, but for an ``initialize`` asking for
    a ``protocolVersion`` that is not one), or the :class:`_Reply` refusing
    it (rules 7 and 8)."""
    requests = plan.requests
    ids = {m.id for m in requests}
    if len(ids) != len(requests):
        return _error_reply(400, "Invalid Request: two requests of the batch share an id")
    if not ids.isdisjoint(in_progress):
        return _error_reply(400, "Invalid Request: a request with this id is already in progress")
    if pending_streams >= max_streams:
        return _error_reply(429, "Too many requests in flight in this session")
    init_params = plan.init_params()
    asked = init_params.get("protocolVersion") if init_params is not None else None
    version = (
        plan.modern_version
        or asked
        or session_version  # negotiated: it decides, whatever the header says
        or plan.header_version
        or DEFAULT_VERSION
    )
    return version
