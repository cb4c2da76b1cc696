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
"""

from __future__ import annotations

import math
from typing import Any

import trio
from msgspec import UNSET

from .... import _jsonrpc as rpc
from ..._base import Frame, RequestId
from .._sse import SSEDecoder, SSEError
from ._channel import _ERROR_BODY_LIMIT, _LINGER, _SESSION_ID, _Exchange, _Renewed, log
from ._http11 import Failure, Response, excerpt
from ._legacy import _LegacyMixin
from ._lifecycle import _SessionMixin
from ._peek import _BAD_JSON


class _ExchangeMixin(_SessionMixin, _LegacyMixin):
    """Request exchanges: the POST, its JSON or SSE answer, resumption, HTTP errors."""

    async def _request_task(self, exchange: _Exchange) -> None:
        failure: Failure | None = None
        with exchange.scope:
            try:
                async with self._limiter:
                    exchange.sending = True
                    try:
                        await self._exchange(exchange)
                    except _Renewed:
                        await self._exchange(exchange)  # once, on the new session
            except _Renewed:
                failure = Failure("session_expired", "the renewed session was refused too", status=404)
            except Failure as exc:
                failure = exc
        if exchange.abandoned or self._closed:
            return
        if failure is None and exchange.remaining:
            failure = Failure("bad_response", "the server ended the exchange without a response")
        if failure is not None:
            await self._fail(exchange, failure)

    async def _fail(self, exchange: _Exchange, failure: Failure) -> None:
        for id in sorted(exchange.remaining, key=str):
            if self._pending.get(id) is exchange:
                del self._pending[id]
            await self._put(failure.frame(id))
        exchange.remaining.clear()

    async def _exchange(self, exchange: _Exchange) -> None:
        msg = exchange.msg
        headers = self._message_headers(exchange.data, msg)
        sent_session = self.session_id if not exchange.modern else None
        resp = await self._send("POST", self._target.path, headers, exchange.data)
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
                    self.session_id = session_id
            if not 200 <= status < 300:
                await self._http_error(exchange, resp, sent_session)
                return
            ctype = resp.content_type
            if ctype == "text/event-stream":
                await self._read_stream(exchange, resp)
            elif ctype == "application/json" and status not in (202, 204):
                body = await resp.read(self.max_message_size)
                resp.finish()  # the connection is free before the engine sees the answer
                if not body.strip():
                    raise Failure("bad_response", f"the server answered {resp.describe()} with an empty body")
                await self._deliver(body)
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
            if await self._renew(sent_session):
                raise _Renewed
            await self._expire()
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
            and self.legacy_fallback
            and status in (400, 404, 405)
            and self.session_id is None
            and sent_session is None
            and "initialize" in exchange.msg.methods.values()
        ):
            resp.finish()
            if await self._fall_back(exchange, resp.describe()):
                return
        if errors:
            ids = list(exchange.remaining)
            for id, code, message, data in errors:
                if id is None and len(ids) == 1:
                    id = ids[0]
                if id is None or id not in exchange.remaining:
                    continue
                exchange.remaining.discard(id)
                if self._pending.get(id) is exchange:
                    del self._pending[id]
                await self._put(Frame(rpc.encode_error(id, code, message, data)))
            if not exchange.remaining:
                return
        text = excerpt(body)
        raise Failure(
            "http_status",
            f"{resp.describe()} from {self._url}" + (f": {text}" if text else ""),
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
        decoder = SSEDecoder(self.max_message_size)
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
                            await self._deliver(event.data)
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
                    limit=self.max_message_size,
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
        failures = 0
        last_error = ""
        while exchange.remaining:
            if failures >= self.reconnect_attempts:
                raise Failure(
                    "stream_ended",
                    f"the response stream ended before the response; {failures} attempts "
                    "to resume it "
                    f"with Last-Event-ID failed (last: {last_error})",
                )
            await trio.sleep(self._delay(exchange.retry))
            if self._ended is not None:
                return
            assert exchange.last_event_id is not None
            headers = self._headers(
                accept="text/event-stream",
                version=self.protocol_version,
                extra=[("Last-Event-ID", exchange.last_event_id.encode())],
            )
            sent_session = self.session_id is not None
            try:
                resp = await self._send("GET", self._target.path, headers)
            except Failure as exc:
                failures += 1
                last_error = exc.message
                continue
            try:
                if resp.status == 404 and sent_session:
                    await self._expire()
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
