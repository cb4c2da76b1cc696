"""A request's exchange on the Streamable HTTP client: its POST and the answer.

Each request (or batch) is POSTed in its own task, holding one of
``max_connections`` connections until its answer is in.  The answer is JSON
(one message or a batch) or an SSE stream whose events are delivered as they
come; a stream that ends before the response is resumed with GET +
``Last-Event-ID`` (up to 2025-11-25, at most ``reconnect_attempts`` failed
attempts in a row).  A refusal becomes the request's failure, unless it is a
404 for the session (renewal, then the request once more), the refusal of the
first ``initialize`` that the legacy HTTP+SSE transport may answer (fallback),
or a JSON-RPC error in the HTTP error body (delivered as is).  Every request
whose exchange fails gets an error response for its id: none hangs.

Notifications and responses are POSTed by :meth:`_Exchanges.post`, in the
sending task (so they reach the server in order), bounded by ``timeout``.
"""

from __future__ import annotations

import math
from typing import Any

import trio
from msgspec import UNSET

from .... import _jsonrpc as rpc
from ..._base import Frame, RequestId
from .._sse import SSEDecoder, SSEError
from ._channel import (
    _ERROR_BODY_LIMIT,
    _LINGER,
    _SESSION_ID,
    _Exchange,
    _Renewed,
    _Sender,
    _Settings,
    _Tasks,
    log,
)
from ._http11 import Failure, Response, excerpt
from ._inbox import _Inbox
from ._legacy import _Legacy
from ._lifecycle import _Lifecycle
from ._peek import _BAD_JSON, _is_modern, _Message
from ._session_state import _SessionState


class _Exchanges:
    """Request exchanges: the POST, its JSON or SSE answer, resumption, HTTP errors; and
    the POST of a notification or response."""

    __slots__ = ("_settings", "_sender", "_state", "_inbox", "_lifecycle", "_legacy", "_tasks")

    def __init__(
        self,
        settings: _Settings,
        sender: _Sender,
        state: _SessionState,
        inbox: _Inbox,
        lifecycle: _Lifecycle,
        legacy: _Legacy,
        tasks: _Tasks,
    ) -> None:
        self._settings = settings
        self._sender = sender
        self._state = state
        self._inbox = inbox
        self._lifecycle = lifecycle
        self._legacy = legacy
        self._tasks = tasks

    def start(self, exchange: _Exchange) -> None:
        """Send the exchange's request (or batch) in a task of its own."""
        self._inbox.expect(exchange)
        self._tasks.nursery.start_soon(self._request_task, exchange)

    async def _request_task(self, exchange: _Exchange) -> None:
        failure: Failure | None = None
        with exchange.scope:
            try:
                async with self._sender.limiter:
                    exchange.sending = True
                    try:
                        await self._exchange(exchange)
                    except _Renewed:
                        await self._exchange(exchange)  # once, on the new session
            except _Renewed:
                failure = Failure("session_expired", "the renewed session was refused too", status=404)
            except Failure as exc:
                failure = exc
        if exchange.abandoned or self._tasks.closed:
            return
        if failure is None and exchange.remaining:
            failure = Failure("bad_response", "the server ended the exchange without a response")
        if failure is not None:
            await self._inbox.fail(exchange, failure)

    async def _exchange(self, exchange: _Exchange) -> None:
        msg, state = exchange.msg, self._state
        headers = state.message_headers(exchange.data, msg)
        sent_session = state.session_id if not exchange.modern else None
        resp = await self._sender.send("POST", self._sender.target.path, headers, exchange.data)
        try:
            status = resp.status
            if "initialize" in msg.methods.values() and 200 <= status < 300:
                session_id = resp.headers.get("mcp-session-id")
                if session_id is not None:
                    if not _SESSION_ID.fullmatch(session_id):
                        raise Failure(
                            "bad_response",
                            f"the server sent an invalid Mcp-Session-Id: {session_id!r}",
                        )
                    state.session_id = session_id
            if not 200 <= status < 300:
                await self._http_error(exchange, resp, sent_session)
                return
            ctype = resp.content_type
            if ctype == "text/event-stream":
                await self._read_stream(exchange, resp)
            elif ctype == "application/json" and status not in (202, 204):
                body = await resp.read(self._settings.max_message_size)
                resp.finish()  # the connection is free before the engine sees the answer
                if not body.strip():
                    raise Failure("bad_response", f"the server answered {resp.describe()} with an empty body")
                await self._inbox.deliver(body)
                return
            else:
                what = f"content type {ctype!r}" if ctype else "no body"
                raise Failure(
                    "bad_response",
                    f"the server answered the request with {resp.describe()} and {what}",
                )
        finally:
            resp.finish()
        if exchange.remaining:
            await self._resume(exchange)

    async def _http_error(self, exchange: _Exchange, resp: Response, sent_session: str | None) -> None:
        status = resp.status
        if status == 404 and sent_session is not None:
            resp.finish()
            if await self._lifecycle.renew(sent_session):
                raise _Renewed
            await self._lifecycle.expire()
            return
        if 300 <= status < 400:
            location = resp.headers.get("location", "")
            raise Failure(
                "redirect",
                f"the server redirected ({resp.describe()}) to {location!r}; redirects are "
                "not followed, "
                "use that URL as the endpoint if it is the intended server",
                status=status,
                location=location,
            )
        body = await resp.read_prefix(_ERROR_BODY_LIMIT)
        errors = self._jsonrpc_errors(body) if resp.content_type == "application/json" else []
        if (
            not errors
            and self._settings.legacy_fallback
            and status in (400, 404, 405)
            and self._state.session_id is None
            and sent_session is None
            and "initialize" in exchange.msg.methods.values()
        ):
            resp.finish()
            if await self._legacy.fall_back(exchange, resp.describe()):
                return
        if errors:
            ids = list(exchange.remaining)
            for id, code, message, data in errors:
                if id is None and len(ids) == 1:
                    id = ids[0]
                if id is None or id not in exchange.remaining:
                    continue
                await self._inbox.answer(exchange, id, Frame(rpc.encode_error(id, code, message, data)))
            if not exchange.remaining:
                return
        text = excerpt(body)
        raise Failure(
            "http_status",
            f"{resp.describe()} from {self._sender.url}" + (f": {text}" if text else ""),
            status=status,
            body=text,
        )

    @staticmethod
    def _jsonrpc_errors(body: bytes) -> list[tuple[RequestId | None, int, str, Any]]:
        """The JSON-RPC error responses in an HTTP error body, if that is what it holds."""
        try:
            items: list[Any] = [body] if body.lstrip()[:1] != b"[" else list(rpc.decode_batch(body))
            found = []
            for raw in items:
                env = rpc.decode_envelope(raw)
                if env.error is UNSET or env.method is not UNSET or env.id is UNSET:
                    return []
                err = rpc.decode_error(env.error)
                found.append((env.id, err.code, err.message, None if err.data is UNSET else err.data))
            return found
        except _BAD_JSON:
            return []

    async def _read_stream(self, exchange: _Exchange, resp: Response) -> None:
        """Deliver a response stream's messages until it ends (or lingers after the answer)."""
        decoder = SSEDecoder(self._settings.max_message_size)
        exchange.dropped = None
        with trio.CancelScope() as linger:
            try:
                while (chunk := await resp.next_chunk()) is not None:
                    events = decoder.feed(chunk)
                    # Take what already arrived too: if that is the end of the
                    # stream, the connection is free before the engine sees the answer.
                    while (more := resp.buffered_chunk()) is not None:
                        events += decoder.feed(more)
                    if resp.done:
                        resp.finish()
                    for event in events:
                        if event.event == "message":
                            await self._inbox.deliver(event.data)
                        else:
                            log.debug("ignoring SSE event of type %r", event.event)
                    if decoder.last_event_id is not None:
                        exchange.last_event_id = decoder.last_event_id
                    if decoder.retry is not None:
                        exchange.retry = decoder.retry
                    if not exchange.remaining and linger.deadline == math.inf:
                        linger.deadline = trio.current_time() + _LINGER
            except SSEError as exc:
                raise Failure(
                    "too_large",
                    f"the event stream broke a limit: {exc}",
                    limit=self._settings.max_message_size,
                ) from None
            except Failure as exc:
                if exc.reason != "connection":
                    raise
                log.debug("response stream dropped: %s", exc)
                exchange.dropped = exc.message
        if decoder.last_event_id is not None:
            exchange.last_event_id = decoder.last_event_id
        if decoder.retry is not None:
            exchange.retry = decoder.retry

    async def _resume(self, exchange: _Exchange) -> None:
        """Reopen a response stream that ended early: GET with ``Last-Event-ID``."""
        if exchange.modern or exchange.last_event_id is None:
            how = f" ({exchange.dropped})" if exchange.dropped else ""
            raise Failure(
                "stream_ended",
                f"the response stream ended before the response{how}"
                + ("" if exchange.modern else "; it cannot be resumed (the server sent no event id)"),
            )
        state, sender = self._state, self._sender
        failures = 0
        last_error = ""
        while exchange.remaining:
            if failures >= self._settings.reconnect_attempts:
                raise Failure(
                    "stream_ended",
                    f"the response stream ended before the response; {failures} attempts "
                    "to resume it "
                    f"with Last-Event-ID failed (last: {last_error})",
                )
            await trio.sleep(self._settings.delay(exchange.retry))
            if self._inbox.ended is not None:
                return
            assert exchange.last_event_id is not None
            headers = state.headers(
                accept="text/event-stream",
                version=state.protocol_version,
                extra=[("Last-Event-ID", exchange.last_event_id.encode())],
            )
            sent_session = state.session_id is not None
            try:
                resp = await sender.send("GET", sender.target.path, headers)
            except Failure as exc:
                failures += 1
                last_error = exc.message
                continue
            try:
                if resp.status == 404 and sent_session:
                    await self._lifecycle.expire()
                    return
                if resp.status == 200 and resp.content_type == "text/event-stream":
                    failures = 0
                    await self._read_stream(exchange, resp)
                else:
                    failures += 1
                    body = await resp.read_prefix(_ERROR_BODY_LIMIT)
                    last_error = f"{resp.describe()}: {excerpt(body)}"
            finally:
                resp.finish()

    # ------------------------------------------------------------ notifications and responses

    async def post(self, data: bytes, msg: _Message) -> bool:
        """POST a notification or response and wait for its 202 (bounded by ``timeout``).

        True when the server took it; what went wrong otherwise is logged (after a 404
        for the session, the session is renewed and the message sent again, or it expires).
        """
        state = self._state
        headers = state.message_headers(data, msg)
        modern = bool(msg.version and _is_modern(msg.version))
        sent_session = state.session_id if not modern else None
        timeout = self._settings.timeout
        with trio.move_on_after(timeout) as scope:
            try:
                resp = await self._sender.send("POST", self._sender.target.path, headers, data)
            except Failure as exc:
                log.warning("could not post %s: %s", msg.method or "a response", exc)
                return False
            try:
                if resp.status == 404 and sent_session is not None:
                    resp.finish()
                    if msg.method != "notifications/initialized" and await self._lifecycle.renew(
                        sent_session
                    ):
                        await self.post(data, msg)  # on the new session
                    else:
                        await self._lifecycle.expire()
                    return False
                body = await resp.read_prefix(_ERROR_BODY_LIMIT)
                if not 200 <= resp.status < 300:
                    log.warning(
                        "the server refused %s: %s: %s",
                        msg.method or "a response",
                        resp.describe(),
                        excerpt(body),
                    )
                    return False
            finally:
                resp.finish()
        if scope.cancelled_caught:
            log.warning("posting %s got no answer within %s s", msg.method or "a response", timeout)
            return False
        return True
