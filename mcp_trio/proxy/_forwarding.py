"""What a proxy answers with: every request forwarded, as it is, over the upstream session, and
what the upstream sends (notifications, asks) passed back to the proxy's clients.

Rules (docs/guide/composition.md, "Proxying"):

* **Requests** of the proxy's clients are sent upstream with their params as they came (wire
  names, ``_meta`` included; the client's ``progressToken`` is replaced by the proxy's own and
  the upstream's progress is reported back under the client's).  The upstream's result, or its
  JSON-RPC error (code, message, data), is the answer, untouched: schemas, annotations,
  structured content, cursors (so pagination is the upstream's).  Cancelling a request
  cancels it upstream.
* **Failures of the upstream** are answered with -32603 naming them: no connection within the
  wait, the connection lost while the request was in flight, no answer within ``timeout``, an
  answer that was not valid.  Nothing waits forever.
* **Asks of the upstream** (sampling, elicitation, roots), which arrive as requests up to
  2025-11-25, go to the client of the request they are made for: the one forwarded request in
  flight whose client declared the capability asked for, the newest if several (over stdio and
  HTTP an ask does not say which request it belongs to).  With none, the upstream gets -32603
  saying so.  From 2026-07-28 on, asks are results (``InputRequiredResult``) and pass through
  as any other result.
* **Notifications of the upstream**: ``list_changed`` goes to every session of the proxy (and
  its ``subscriptions/listen`` streams); ``resources/updated`` to the sessions subscribed to
  the URI (the proxy subscribes upstream once per URI, and unsubscribes when the last of its
  clients does); from 2026-07-28 on, to the proxy's ``subscriptions/listen`` streams that ask
  for the URI (the upstream's stream watches every URI one of them asks for; a client's stream
  is acknowledged once the upstream's is; after a reconnection each is told updated); the
  others (log messages, ...) to the client of the newest request in flight, or, with none, to
  every session that sent one.  ``notifications/roots/list_changed`` of a client goes upstream.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from .. import _jsonrpc as rpc
from .._engine._context import RequestContext
from .._engine._outgoing import ProgressCallback, RequestTimeout
from .._engine._session import Session
from .._exceptions import ConnectionClosed, McpError, ProtocolError
from ..client import Client
from ..transports.http._headers import Annotations, header_annotations
from ..types import _versions
from ._metrics import ForwardingTally
from ._upstream import Upstream, Upstreams, UpstreamUnavailable

if TYPE_CHECKING:
    from ..server import GracefulShutdown
    from ..transports._base import MessageChannel
    from ._relay import StdioRelay

__all__ = ["Forwarding", "FORWARDED", "MAX_WATCHED"]

log = logging.getLogger("mcp_trio.proxy")

#: The requests of a client a proxy forwards (those the upstream's capabilities allow reach it;
#: the others are refused by the proxy's session as by any server's).
FORWARDED = (
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
    "tasks/update",
)
#: The asks of the upstream a proxy passes to a client: method -> the capability it needs.
ASKS = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}
_LISTS = frozenset(
    {
        "notifications/tools/list_changed",
        "notifications/resources/list_changed",
        "notifications/prompts/list_changed",
    }
)
_ANY = dict[str, Any]
_MAX_PAGES = 1000  # (of tools/list, read for the header annotations)
#: The resources an upstream listen stream watches at most for the proxy's clients' streams.
MAX_WATCHED = 10_000
_Handler = Callable[[RequestContext, Any], Any]


def _wire(params: Any) -> dict[str, Any]:
    """``params`` (a Struct, a dict or None) as wire JSON values, without a ``progressToken``."""
    value = msgspec.to_builtins(params) if params is not None else {}
    if not isinstance(value, dict):
        return {}
    meta = value.get("_meta")
    if isinstance(meta, dict) and "progressToken" in meta:
        meta = {k: v for k, v in meta.items() if k != "progressToken"}
        value["_meta"] = meta
        if not meta:
            del value["_meta"]
    return value


class Forwarding:
    """A proxy's answers (the ``Answering`` of its :class:`~mcp_trio.server.Server`)."""

    __slots__ = (
        "_upstreams",
        "_where",
        "_timeout",
        "_in_flight",
        "_seen",
        "_subscribers",
        "_announce",
        "_listen",
        "_updated",
        "_headers",
        "_rename_uri",
        "tally",
        "relay",
    )

    def __init__(
        self,
        upstreams: Upstreams,
        where: str,
        *,
        timeout: float | None,
        rename_uri: Callable[[str], str | None] | None = None,
    ) -> None:
        self._upstreams = upstreams
        self._where = where  # (the proxied server, as the messages name it)
        self._timeout = timeout
        self._in_flight: dict[int, RequestContext] = {}  # (in arrival order)
        self._seen: weakref.WeakSet[Session] = weakref.WeakSet()  # (sessions that sent a request)
        #: (revision, URI) -> the sessions subscribed to it.
        self._subscribers: dict[tuple[str, str], set[Session]] = {}
        self._announce: Callable[[str], None] = lambda method: None
        self._listen: Any = None
        self._updated: Callable[[str], None] = lambda uri: None
        self._headers: dict[str, Annotations] = {}  # (tool -> its x-mcp-header annotations)
        #: What a URI of the upstream is called by the clients (a gateway's prefix); None: itself.
        self._rename_uri = rename_uri
        #: Its requests counted, by method and outcome, and timed (:mod:`._metrics`).
        self.tally = ForwardingTally()
        #: The stdio relay of a proxy (:mod:`._relay`), or None.
        self.relay: StdioRelay | None = None

    # ---------------------------------------------------------- the server's side

    @property
    def upstreams(self) -> Upstreams:
        return self._upstreams

    def attach(self, announce: Callable[[str], None], listen: Any, updated: Callable[[str], None]) -> None:
        self._announce = announce
        self._listen = listen
        self._updated = updated

    def _primary(self) -> Client | None:
        primary = self._upstreams.primary
        return primary.current() if primary is not None else None

    def capabilities(self) -> dict[str, Any]:
        client = self._primary()
        return dict(client.server_capabilities) if client is not None else {}

    def header_annotations(self, name: str) -> Annotations | None:
        return self._headers.get(name)

    def open_stdio(
        self, shutdown: GracefulShutdown | None, options: dict[str, Any]
    ) -> AbstractAsyncContextManager[MessageChannel] | None:
        relay = self.relay
        return None if relay is None else relay.downstream(shutdown, options)

    async def learn_tools(self) -> None:
        """Read the upstream's tools for their ``x-mcp-header`` annotations, which the proxy's
        Streamable HTTP door checks ``Mcp-Param-*`` headers against (2026-07-28); a failure
        is logged (the door then checks none)."""
        client = self._primary()
        if client is None or "tools" not in client.server_capabilities:
            return
        found: dict[str, Annotations] = {}
        cursor: object = None
        try:
            for _ in range(_MAX_PAGES):
                params = {} if cursor is None else {"cursor": cursor}
                page = await client.session.request(
                    "tools/list", params, timeout=self._timeout, result_type=_ANY
                )
                for tool in page.get("tools", ()):
                    annotations = header_annotations(tool.get("inputSchema"))
                    found[str(tool.get("name"))] = annotations if isinstance(annotations, list) else []
                cursor = page.get("nextCursor")
                if not cursor:
                    break
        except Exception as exc:
            log.warning("proxy: listing the tools of %s failed: %s", self._where, exc)
            return
        self._headers = found

    def request_handlers(self) -> dict[str, Any]:
        handlers: dict[str, Any] = dict.fromkeys(FORWARDED, self.forward)
        handlers["resources/subscribe"] = self.subscribe
        handlers["resources/unsubscribe"] = self.unsubscribe
        if self._listen is not None:
            handlers["subscriptions/listen"] = self.listen  # (the proxy's own streams)
        return handlers

    async def listen(self, ctx: RequestContext, params: Any) -> Any:
        """A client's ``subscriptions/listen`` (2026-07-28): answered by the proxy's own streams,
        the upstream's stream watching the resources it asks about while it is open."""
        async with self.watching(ctx.version, resource_subscriptions(params)):
            return await self._listen(ctx, params)

    @asynccontextmanager
    async def watching(self, version: str, uris: Sequence[str]) -> AsyncIterator[None]:
        """The upstream session of ``version`` watching ``uris`` (as the upstream names them)
        while the block runs: their ``notifications/resources/updated`` reach the proxy's
        streams that asked for them (when the upstream offers subscriptions)."""
        upstream = self._upstreams.get(version)
        client = upstream.current() if upstream is not None else None
        offered = client.server_capabilities.get("resources") if client is not None else None
        if upstream is None or not uris or not (isinstance(offered, dict) and offered.get("subscribe")):
            yield
            return
        if upstream.watched() + len(uris) > MAX_WATCHED:
            raise McpError(
                rpc.INVALID_PARAMS,
                f"the proxy watches at most {MAX_WATCHED} resources of {self._where} for its clients' "
                f"streams; {upstream.watched()} are watched, and this stream asks for {len(uris)} more",
            )
        async with upstream.watching(uris):
            yield

    async def reconnected(self, upstream: Upstream) -> None:
        """An upstream session was opened again: its lists may differ (told to every session),
        and its subscriptions are gone (made again)."""
        for method in sorted(_LISTS):
            self._announce(method)
        if upstream is self._upstreams.primary:
            await self.learn_tools()
        client = upstream.current()
        if client is None:
            return
        for version, uri in list(self._subscribers):
            if version != upstream.version:
                continue
            try:
                await client.session.request("resources/subscribe", {"uri": uri}, timeout=self._timeout)
            except Exception as exc:
                log.warning("proxy: subscribing to %s again failed: %s", uri, exc)

    # --------------------------------------------------------------- forwarding

    async def forward(self, ctx: RequestContext, params: Any) -> Any:
        """Send the request upstream and answer with what comes back."""
        plain = ctx.progress_token is None and not _versions.is_stateless(ctx.version)
        result = await self._send(ctx, ctx.method, params if plain else _wire(params))
        relay = self.relay
        if relay is not None and not relay.relaying:
            relay.consider(ctx)  # (its next calls may go through the relay)
        return result

    async def request(self, ctx: RequestContext, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send ``method`` upstream for the client's request ``ctx`` (with the same handling of
        progress, cancellation and failures as a forwarded request); the result as a dict."""
        result = await self._send(ctx, method, params, decoded=True)
        assert isinstance(result, dict)
        return result

    async def _send(self, ctx: RequestContext, method: str, params: Any, *, decoded: bool = False) -> Any:
        key = id(ctx)
        self._in_flight[key] = ctx
        self._seen.add(ctx.session)
        on_progress: ProgressCallback | None = None
        if ctx.progress_token is not None:

            async def report(progress: float, total: float | None, message: str | None) -> None:
                await ctx.report_progress(progress, total, message)

            on_progress = report

        outcome = "cancelled"
        began = trio.current_time()
        try:
            client = await self._upstreams.client(ctx.version)
            result = await client.session.request(
                method,
                params,
                timeout=self._timeout,
                on_progress=on_progress,
                result_type=_ANY if decoded else msgspec.Raw,
            )
            outcome = "ok"
        except UpstreamUnavailable as exc:
            outcome = "unavailable"
            raise McpError(rpc.INTERNAL_ERROR, str(exc)) from None
        except ConnectionClosed as exc:
            outcome = "lost"
            raise McpError(
                rpc.INTERNAL_ERROR,
                f"the connection to the proxied server {self._where} was lost while "
                f"{method} was in flight ({exc})",
            ) from None
        except RequestTimeout:
            outcome = "timeout"
            raise McpError(
                rpc.INTERNAL_ERROR,
                f"the proxied server {self._where} did not answer {method} within {self._timeout} s",
            ) from None
        except McpError:
            outcome = "error"
            raise  # (the upstream's error, as it is)
        except ProtocolError as exc:
            outcome = "invalid"
            raise McpError(
                rpc.INTERNAL_ERROR,
                f"the proxied server {self._where} answered {method} with a message that is not valid: {exc}",
            ) from None
        finally:
            del self._in_flight[key]
            self.tally.count(method, outcome, trio.current_time() - began)
        return result if isinstance(result, msgspec.Raw | dict) else msgspec.to_builtins(result)

    async def subscribe(self, ctx: RequestContext, params: Any) -> Any:
        key = (ctx.version, str(params.uri))
        if not self._subscribers.get(key):
            await self._send(ctx, "resources/subscribe", _wire(params))
        self._subscribers.setdefault(key, set()).add(ctx.session)
        return {}

    async def unsubscribe(self, ctx: RequestContext, params: Any) -> Any:
        key = (ctx.version, str(params.uri))
        sessions = self._subscribers.get(key, set())
        sessions.discard(ctx.session)
        sessions -= {s for s in sessions if s.closed.is_set()}
        if not sessions:
            self._subscribers.pop(key, None)
            await self._send(ctx, "resources/unsubscribe", _wire(params))
        return {}

    # --------------------------------------------------------------- upstream's side

    def _newest(self, version: str, capability: str | None) -> RequestContext | None:
        """The newest request in flight in ``version`` (whose client declared ``capability``,
        if given)."""
        for ctx in reversed(self._in_flight.values()):
            if ctx.version == version and (capability is None or capability in ctx.client_capabilities):
                return ctx
        return None

    async def ask(self, upstream_ctx: RequestContext, params: Any) -> Any:
        """An ask of the upstream (sampling, elicitation, roots): put to a client."""
        method = upstream_ctx.method
        capability = ASKS[method]
        ctx = self._newest(upstream_ctx.version, capability)
        # (with only relayed calls in flight: the stdio client of the relay)
        asked = (
            ctx
            if ctx is not None or self.relay is None
            else self.relay.asking(upstream_ctx.version, capability)
        )
        if asked is None:
            raise McpError(
                rpc.INTERNAL_ERROR,
                f"the proxy cannot pass {method} on: none of its clients with a request in flight "
                f"declared the {capability!r} capability",
            )
        try:
            result = await asked.request(method, _wire(params), timeout=self._timeout)
        except ConnectionClosed as exc:
            raise McpError(rpc.INTERNAL_ERROR, f"the proxy's client went away: {exc}") from None
        except RequestTimeout:
            raise McpError(
                rpc.INTERNAL_ERROR, f"the proxy's client did not answer {method} within {self._timeout} s"
            ) from None
        return msgspec.to_builtins(result)

    async def notified(self, version: str, method: str, params: Any) -> None:
        """A notification of the upstream session of ``version`` (from its relay queue)."""
        if method in _LISTS:
            if method == "notifications/tools/list_changed":
                await self.learn_tools()
            self._announce(method)
            return
        wire = _wire(params) if params is not None else None
        if method == "notifications/resources/updated":
            uri = str(wire.get("uri")) if wire else ""
            sessions = list(self._subscribers.get((version, uri), ()))
            if wire and self._rename_uri is not None:
                wire["uri"] = self._rename_uri(uri)
            outer = wire.get("uri") if wire else None
            if isinstance(outer, str) and _versions.is_stateless(version):
                self._updated(outer)  # (to the proxy's listen streams watching it)
            for session in sessions:
                await _notify(session, method, wire)
            return
        ctx = self._newest(version, None)
        if ctx is not None:
            await _notify(ctx.session, method, wire, related=ctx.id)
            return
        for session in list(self._seen):
            if session.protocol_version == version:
                await _notify(session, method, wire)

    async def roots_changed(self, session: Session, method: str, params: Any) -> None:
        """A client's ``notifications/roots/list_changed``: tell the upstream."""
        upstream = self._upstreams.get(session.protocol_version or "")
        client = upstream.current() if upstream is not None else None
        if client is not None:
            try:
                await client.session.notify(method)
            except Exception as exc:
                log.debug("proxy: could not pass %s on: %s", method, exc)


def resource_subscriptions(params: Any) -> list[str]:
    """The URIs a ``subscriptions/listen`` request asks the updates of."""
    wanted = msgspec.to_builtins(params).get("notifications", {}).get("resourceSubscriptions")
    return [uri for uri in wanted if isinstance(uri, str)] if isinstance(wanted, list) else []


async def _notify(session: Session, method: str, params: Any, related: Any = None) -> None:
    if session.closed.is_set():
        return
    with trio.move_on_after(5.0):  # (a client that does not read cannot hold the relay up)
        try:
            await session.notify(method, params, related=related)
        except Exception as exc:  # (the session may be closing; a level it did not ask for)
            log.debug("proxy: could not send %s: %s", method, exc)
