"""The client of the deprecated HTTP+SSE transport (2024-11-05), and the switch to it.

The SSE stream is opened with GET and must send an ``endpoint`` event (within
``timeout``) naming a URL on the same origin; every message is then POSTed
there and every answer comes on the stream.  The stream is the session: when
it ends, every pending request fails (reason ``stream_ended``) and the channel
ends.  :meth:`_LegacyMixin._fall_back` switches a Streamable HTTP channel to
this transport when its ``initialize`` POST was refused; messages sent
meanwhile wait for the switch.
"""

from __future__ import annotations

import math
import urllib.parse

import trio

from .._sse import SSEDecoder, SSEError
from ._channel import _ACCEPT_BOTH, _ERROR_BODY_LIMIT, _ChannelBase, _Exchange, log
from ._http11 import Failure, excerpt
from ._peek import _Message


class _LegacyMixin(_ChannelBase):
    """The legacy HTTP+SSE client: its SSE stream, its POSTs, and the fallback to it."""

    async def _fall_back(self, exchange: _Exchange, refusal: str) -> bool:
        """Switch to HTTP+SSE (2024-11-05) and resend ``initialize`` there (False: none there)."""
        self._switching = trio.Event()
        try:
            try:
                assert self._tasks is not None
                await self._tasks.start(self._legacy_stream)
            except Failure as exc:
                log.info("no legacy HTTP+SSE endpoint either: %s", exc)
                return False
            log.info("the server refused the Streamable HTTP POST (%s); using HTTP+SSE", refusal)
            exchange.remaining.clear()  # the legacy stream answers it now
            await self._legacy_post(exchange.data, exchange.msg)
            return True
        finally:
            self._switching.set()
            self._switching = None

    async def _connect_legacy(self) -> None:
        assert self._tasks is not None
        await self._tasks.start(self._legacy_stream)

    async def _legacy_stream(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Open the SSE stream, wait for its ``endpoint`` event, then deliver its messages."""
        headers = self._headers(accept="text/event-stream", session=False)
        started = False
        resp = None
        with trio.move_on_after(self.timeout) as opening:
            resp = await self._send("GET", self._target.path, headers)
        if resp is None:
            raise Failure("connect", f"the SSE endpoint did not answer within {self.timeout} s")
        reason = "the server closed the SSE stream"
        try:
            if resp.status != 200 or resp.content_type != "text/event-stream":
                body = await resp.read_prefix(_ERROR_BODY_LIMIT)
                raise Failure(
                    "http_status",
                    f"the SSE endpoint answered {resp.describe()}"
                    + (f" with {resp.content_type!r}" if resp.status == 200 else "")
                    + (f": {excerpt(body)}" if body else ""),
                    status=resp.status,
                )
            decoder = SSEDecoder(self.max_message_size)
            opening = trio.CancelScope(deadline=trio.current_time() + self.timeout)
            with opening:
                while (chunk := await resp.next_chunk()) is not None:
                    for event in decoder.feed(chunk):
                        if event.event == "endpoint" and not started:
                            url = urllib.parse.urljoin(
                                self._url, event.data.decode("utf-8", "replace").strip()
                            )
                            target = self._target.same_origin(url)
                            if target is None:
                                raise Failure(
                                    "bad_response",
                                    f"the endpoint event names another origin: {url!r}",
                                )
                            self._legacy_target = target
                            self.transport = "sse"
                            started = True
                            opening.deadline = math.inf
                            task_status.started()
                        elif event.event == "message":
                            await self._deliver(event.data)
            if not started:
                what = "within" if opening.cancelled_caught else "before the stream ended, after"
                raise Failure("bad_response", f"no endpoint event {what} {self.timeout} s")
        except SSEError as exc:
            if not started:
                raise Failure("too_large", f"the event stream broke a limit: {exc}") from None
            reason = f"the SSE stream broke a limit: {exc}"
        except Failure as exc:
            if not started:
                raise
            reason = f"the SSE stream broke: {exc.message}"
        finally:
            resp.finish()
        # The stream is the session: without it nothing more can arrive.
        self._ended = reason
        failure = Failure("stream_ended", reason)
        victims = list(self._pending)
        self._pending.clear()
        for request_id in victims:
            await self._put(failure.frame(request_id))
        self._end()

    async def _legacy_post(self, data: bytes, msg: _Message) -> None:
        """POST one message to the legacy endpoint; its answer comes on the SSE stream."""
        assert self._legacy_target is not None
        for id in msg.methods:
            self._pending[id] = _Exchange(data, msg, False)
        headers = self._headers(accept=_ACCEPT_BOTH, body=data, session=False)
        failure: Failure | None = None
        with trio.move_on_after(self.timeout) as scope:
            try:
                resp = await self._send("POST", self._legacy_target, headers, data)
            except Failure as exc:
                failure = exc
            else:
                try:
                    body = await resp.read_prefix(_ERROR_BODY_LIMIT)
                    if not 200 <= resp.status < 300:
                        text = excerpt(body)
                        failure = Failure(
                            "http_status",
                            f"{resp.describe()} from the message endpoint" + (f": {text}" if text else ""),
                            status=resp.status,
                            body=text,
                        )
                finally:
                    resp.finish()
        if scope.cancelled_caught:
            failure = Failure("connection", f"the message endpoint did not answer within {self.timeout} s")
        if failure is None:
            return
        if not msg.methods:
            log.warning("could not post %s: %s", msg.method or "a response", failure)
        for id in msg.methods:
            if self._pending.pop(id, None) is not None:
                await self._put(failure.frame(id))
