"""Server-Sent Events, sans-IO: bytes in, events out, and the reverse.

Follows the WHATWG HTML "event stream" rules: lines end with CRLF, LF or CR;
a blank line dispatches the event; ``data`` lines are joined with LF; a
line starting with ``:`` is a comment; ``id`` with a NUL is ignored;
``retry`` takes ASCII digits only.  A UTF-8 BOM at the very start is skipped.

The decoder bounds memory: a line or an event longer than ``max_event_size``
raises :class:`SSEError` (the caller closes the stream).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SSEDecoder", "SSEError", "SSEEvent", "encode_comment", "encode_event"]

DEFAULT_MAX_EVENT_SIZE = 16 * 1024 * 1024


class SSEError(Exception):
    """The stream broke a limit (it cannot be read further)."""


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event.

    Attributes:
        data: The event's data (``data`` lines joined by LF), as bytes.
        event: The event type (``"message"`` when the stream named none).
        id: The last event id seen on the stream so far (``None`` if none).
        retry: The reconnection delay in ms the stream last set, if any.
    """

    data: bytes
    event: str = "message"
    id: str | None = None
    retry: int | None = None


def encode_retry(retry: int) -> bytes:
    """An event that only sets the reconnection delay (no data: not dispatched)."""
    if retry < 0:
        raise ValueError("retry must not be negative")
    return b"retry: %d\n\n" % retry


def encode_event(
    data: bytes | str,
    *,
    id: str | None = None,
    event: str | None = None,
    retry: int | None = None,
) -> bytes:
    """One event, ready to write.  ``data`` may span lines."""
    if isinstance(data, str):
        data = data.encode()
    parts: list[bytes] = []
    if event is not None:
        _check_field("event", event)
        parts.append(b"event: " + event.encode() + b"\n")
    if id is not None:
        _check_field("id", id)
        parts.append(b"id: " + id.encode() + b"\n")
    if retry is not None:
        if retry < 0:
            raise ValueError("retry must not be negative")
        parts.append(b"retry: %d\n" % retry)
    lines = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    for line in lines:
        parts.append(b"data: " + line + b"\n")
    parts.append(b"\n")
    return b"".join(parts)


def encode_comment(text: str = "") -> bytes:
    """A comment line (keeps a stream alive; readers ignore it)."""
    _check_field("comment", text)
    return b": " + text.encode() + b"\n\n" if text else b":\n\n"


def _check_field(name: str, value: str) -> None:
    if "\n" in value or "\r" in value or (name == "id" and "\0" in value):
        raise ValueError(f"SSE {name} may not contain line breaks{' or NUL' if name == 'id' else ''}")


class SSEDecoder:
    """Incremental event-stream parser.

    Feed it bytes as they arrive; it returns the events completed so far.
    ``last_event_id`` and ``retry`` persist across events, as the spec says.
    """

    def __init__(self, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self.max_event_size = max_event_size
        self.last_event_id: str | None = None
        self.retry: int | None = None
        self._buffer = bytearray()
        self._data: list[bytes] = []
        self._data_size = 0
        self._event = ""
        self._started = False
        self._pending_cr = False

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        if not chunk:
            return events
        if self._pending_cr:
            # A CR ended the previous chunk; an LF right after it belongs to it.
            self._pending_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        self._buffer += chunk
        if not self._started:
            if len(self._buffer) < 3 and b"\xef\xbb\xbf".startswith(bytes(self._buffer)):
                return events
            if self._buffer.startswith(b"\xef\xbb\xbf"):
                del self._buffer[:3]
            self._started = True
        start = 0
        buffer = self._buffer
        length = len(buffer)
        while start < length:
            lf = buffer.find(b"\n", start)
            cr = buffer.find(b"\r", start)
            if lf < 0 and cr < 0:
                break
            if cr < 0 or (0 <= lf < cr):
                end, next_start = lf, lf + 1
            elif cr + 1 < length:
                end = cr
                next_start = cr + 2 if buffer[cr + 1 : cr + 2] == b"\n" else cr + 1
            else:
                end, next_start = cr, cr + 1
                self._pending_cr = True
            self._line(bytes(buffer[start:end]), events)
            start = next_start
        del buffer[:start]
        if len(buffer) > self.max_event_size:
            raise SSEError(f"an SSE line is longer than {self.max_event_size} bytes")
        return events

    def _line(self, line: bytes, events: list[SSEEvent]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line[:1] == b":":
            return
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
            self._data_size += len(value) + 1
            if self._data_size > self.max_event_size:
                raise SSEError(f"an SSE event is larger than {self.max_event_size} bytes")
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\0" not in value:
                self.last_event_id = value.decode("utf-8", "replace")
        elif name == b"retry":
            if value and value.isdigit():
                self.retry = int(value)

    def _dispatch(self, events: list[SSEEvent]) -> None:
        # An empty data buffer (no data lines, or one empty one, as in a
        # priming event) dispatches nothing; the id it set still counts.
        if len(self._data) > 1 or (self._data and self._data[0]):
            events.append(
                SSEEvent(b"\n".join(self._data), self._event or "message", self.last_event_id, self.retry)
            )
        self._data = []
        self._data_size = 0
        self._event = ""

    @property
    def primed(self) -> bool:
        """True once the stream set an event id (a priming event counts)."""
        return self.last_event_id is not None
