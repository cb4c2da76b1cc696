"""The client of the deprecated HTTP+SSE transport (2024-11-05), and the switch to it.

The SSE stream is opened with GET and must send an ``endpoint`` event (within
``timeout``) naming a URL on the same origin; every message is then POSTed
there and every answer comes on the stream.  The stream is the session: when
it ends, every pending request fails (reason ``stream_ended``) and the channel
ends.  :meth:`_Legacy.fall_back` switches a Streamable HTTP channel to
this transport when its ``initialize`` POST was refused; messages sent
meanwhile wait for the switch.
"""

from __future__ import annotations

import math
import urllib.parse

import trio

from .._sse import SSEDecoder, SSEError
from ._channel import _ACCEPT_BOTH, _ERROR_BODY_LIMIT, _Exchange, _Sender, _Settings, _Tasks, log
from ._http11 import Failure, excerpt
from ._inbox import _Inbox
from ._peek import _Message


class _Legacy:
    """The legacy HTTP+SSE client: its SSE stream, its POSTs, and the switch to it."""

    __slots__ = ("_settings", "_sender", "_inbox", "_tasks", "target", "switching")

    def __init__(self, settings: _Settings, sender: _Sender, inbox: _Inbox, tasks: _Tasks) -> None:
        self._settings = settings
        self._sender = sender
        self._inbox = inbox
        self._tasks = tasks
        self.target: str | None = None  # the message endpoint, once the endpoint event named it
        self.switching: trio.Event | None = None  # set when a switch under way is over

    async def fall_back(self, exchange: _Exchange, refusal: str) -> bool:
        """Switch to HTTP+SSE (2024-11-05) and resend ``initialize`` there (False: none there)."""
        self.switching = trio.Event()
        try:
            try:
                await self._tasks.nursery.start(self._stream)
            except Failure as exc:
                log.info("no legacy HTTP+SSE endpoint either: %s", exc)
                return False
            log.info("the server refused the Streamable HTTP POST (%s); using HTTP+SSE", refusal)
            exchange.remaining.clear()  # the legacy stream answers it now
            await self.post(exchange.data, exchange.msg)
            return True
        finally:
            self.switching.set()
            self.switching = None

    async def connect(self) -> None:
        """Open the SSE stream and wait for its endpoint (:func:`open_legacy_sse_client`)."""
        await self._tasks.nursery.start(self._stream)

    async def _stream(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Open the SSE stream, wait for its ``endpoint`` event, then deliver its messages."""
        sender, timeout = self._sender, self._settings.timeout
        headers = sender.headers(accept="text/event-stream", session_id=None)
        started = False
        resp = None
        with trio.move_on_after(timeout) as opening:
            resp = await sender.send("GET", sender.target.path, headers)
        if resp is None:
            raise Failure("connect", f"the SSE endpoint did not answer within {timeout} s")
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
            decoder = SSEDecoder(self._settings.max_message_size)
            opening = trio.CancelScope(deadline=trio.current_time() + timeout)
            with opening:
                while (chunk := await resp.next_chunk()) is not None:
                    for event in decoder.feed(chunk):
                        if event.event == "endpoint" and not started:
                            url = urllib.parse.urljoin(
                                sender.url, event.data.decode("utf-8", "replace").strip()
                            )
                            target = sender.target.same_origin(url)
                            if target is None:
                                raise Failure(
                                    "bad_response",
                                    f"the endpoint event names another origin: {url!r}",
                                )
                            self.target = target
                            started = True
                            opening.deadline = math.inf
                            task_status.started()
                        elif event.event == "message":
                            await self._inbox.deliver(event.data)
            if not started:
                what = "within" if opening.cancelled_caught else "before the stream ended, after"
                raise Failure("bad_response", f"no endpoint event {what} {timeout} s")
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
        await self._inbox.end(reason, Failure("stream_ended", reason), abandon=False)

    async def post(self, data: bytes, msg: _Message) -> None:
        """POST one message to the legacy endpoint; its answer comes on the SSE stream."""
        assert self.target is not None
        for id in msg.methods:
            self._inbox.track(id, _Exchange(data, msg, False))
        headers = self._sender.headers(accept=_ACCEPT_BOTH, session_id=None, body=data)
        timeout = self._settings.timeout
        failure: Failure | None = None
        with trio.move_on_after(timeout) as scope:
            try:
                resp = await self._sender.send("POST", self.target, headers, data)
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
            failure = Failure("connection", f"the message endpoint did not answer within {timeout} s")
        if failure is None:
            return
        if not msg.methods:
            log.warning("could not post %s: %s", msg.method or "a response", failure)
        await self._inbox.fail_ids(msg.methods, failure)
