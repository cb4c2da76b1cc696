"""Load generator: the JSON-RPC messages every load sends, and the check of every answer.

Requests are built cheaply (:class:`EchoCall`: no encoder per call); answers are decoded with
msgspec and checked by :func:`_check_answer`: the ``id`` must be the one asked, an error is a
failure, and a ``tools/call`` of ``echo`` must come back with the text sent.  Any wrong, missing
or late answer raises :class:`LoadError`.
"""

from __future__ import annotations

from typing import Any

import msgspec

#: The revision every client asks for: the newest one with the ``initialize``
#: handshake, which every server measured here speaks.
PROTOCOL_VERSION = "2025-11-25"
_TIMEOUT = 60.0  # no answer for this long: the server is stuck


class LoadError(Exception):
    """A server answered wrongly, not at all, or went away."""


def initialize_request(id: int = 0, version: str = PROTOCOL_VERSION) -> bytes:
    return msgspec.json.encode(
        {
            "jsonrpc": "2.0",
            "id": id,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "mcp-trio-loadgen", "version": "1.0"},
            },
        }
    )


INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


class EchoCall:
    """Builds ``tools/call`` requests of ``echo`` for one text, cheaply (no encoder per call)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._head = b'{"jsonrpc":"2.0","id":'
        self._tail = (
            b',"method":"tools/call","params":{"name":"echo","arguments":{"text":'
            + msgspec.json.encode(text)
            + b"}}}"
        )

    def request(self, id: int) -> bytes:
        return b"%s%d%s" % (self._head, id, self._tail)


class _Text(msgspec.Struct):
    type: str
    text: str = ""


class _CallResult(msgspec.Struct):
    content: list[_Text]
    isError: bool = False


class _Message(msgspec.Struct):
    id: Any = msgspec.UNSET
    method: Any = msgspec.UNSET
    result: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    error: Any = msgspec.UNSET

    @property
    def is_notification(self) -> bool:
        return self.method is not msgspec.UNSET and self.id is msgspec.UNSET


_message = msgspec.json.Decoder(_Message)
_messages = msgspec.json.Decoder(_Message | list[_Message])
_call_result = msgspec.json.Decoder(_CallResult)
_any = msgspec.json.Decoder()


def _check_answer(message: _Message, id: Any, expect_text: str | None, id_only: bool = False) -> None:
    if message.id != id:
        raise LoadError(f"answer for id {message.id!r}, expected {id!r}")
    if id_only:
        return
    if message.error is not msgspec.UNSET:
        raise LoadError(f"request {id!r} failed: {message.error!r}")
    if message.result is msgspec.UNSET:
        raise LoadError(f"answer {id!r} has no result")
    if expect_text is not None:
        result = _call_result.decode(message.result)
        if result.isError or not result.content or result.content[0].text != expect_text:
            shown = result.content[0].text[:80] if result.content else None
            raise LoadError(f"tools/call {id!r} answered {shown!r} (isError={result.isError})")
