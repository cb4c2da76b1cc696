"""What the Streamable HTTP client knows of its session, learnt from what it carries.

:class:`_SessionState` holds the ``Mcp-Session-Id``, the negotiated protocol
version, the session's ``initialize`` and ``notifications/initialized`` (to
start a new session after a 404), and the tools' ``x-mcp-header`` annotations
(from ``tools/list`` results; a tool whose annotations are invalid is removed
from the result, as 2026-07-28 requires).  It builds the headers of each
outgoing message from them: the session's, or at 2026-07-28 the request's own
``_meta`` version with ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .... import _jsonrpc as rpc
from ..._base import RequestId
from .._headers import encode_value as _encode_header_value
from .._headers import header_annotations as _header_annotations
from .._headers import param_headers as _param_headers
from ._channel import _ACCEPT_BOTH, _Sender, log
from ._http11 import Headers
from ._peek import _BAD_JSON, _initialize_decoder, _is_modern, _Message


class _SessionState:
    """The session id, the negotiated version, the handshake, the tools' header annotations."""

    __slots__ = (
        "_sender",
        "session_id",
        "protocol_version",
        "init_data",
        "initialized_data",
        "_tool_headers",
    )

    def __init__(self, sender: _Sender) -> None:
        self._sender = sender
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.init_data: bytes | None = None  # the session's initialize, to start a new one
        self.initialized_data: bytes | None = None
        self._tool_headers: dict[str, list[tuple[tuple[str, ...], str]]] = {}

    # ------------------------------------------------------------ learning

    def note_sent(self, data: bytes, msg: _Message) -> None:
        """Learn from an outgoing message: the handshake, a 2026-07-28 request's version."""
        if msg.method == "initialize":
            self.protocol_version = None  # a probe's version must not leak onto the handshake
            self.init_data = data
        elif msg.method == "notifications/initialized":
            self.initialized_data = data
        elif msg.version is not None and _is_modern(msg.version):
            self.protocol_version = msg.version

    def learn_version(self, result: Any) -> None:
        """The ``initialize`` result came: take its ``protocolVersion``."""
        try:
            peek = _initialize_decoder.decode(result)
        except _BAD_JSON:
            return
        if isinstance(peek.protocolVersion, str):
            self.protocol_version = peek.protocolVersion

    def learn_tools(self, id: RequestId, result_raw: Any, data: bytes) -> bytes:
        """Record the tools' ``x-mcp-header`` annotations; drop tools with invalid ones."""
        try:
            result = msgspec.json.decode(result_raw)
        except _BAD_JSON:
            return data
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list):
            return data
        kept: list[Any] = []
        for tool in tools:
            if not isinstance(tool, dict):
                kept.append(tool)
                continue
            name = tool.get("name")
            annotations = _header_annotations(tool.get("inputSchema"))
            if isinstance(annotations, str):
                log.warning("ignoring tool %r from tools/list: %s", name, annotations)
                if isinstance(name, str):
                    self._tool_headers.pop(name, None)
                continue
            if isinstance(name, str):
                if annotations:
                    self._tool_headers[name] = annotations
                else:
                    self._tool_headers.pop(name, None)
            kept.append(tool)
        if len(kept) == len(tools):
            return data
        result["tools"] = kept
        return rpc.encode_response(id, result)

    # ------------------------------------------------------------ headers

    def headers(
        self,
        *,
        accept: str,
        body: bytes | None = None,
        version: str | None = None,
        session: bool = True,
        extra: Headers | None = None,
    ) -> Headers:
        """A request's headers, with the session id unless ``session`` is False."""
        return self._sender.headers(
            accept=accept,
            session_id=self.session_id if session else None,
            body=body,
            version=version,
            extra=extra,
        )

    def message_headers(self, data: bytes, msg: _Message) -> Headers:
        """The headers of the POST of an outgoing message."""
        if msg.method == "initialize":
            return self.headers(accept=_ACCEPT_BOTH, body=data)
        if msg.version is not None and _is_modern(msg.version):
            extra: Headers = [("Mcp-Method", msg.method or "")]
            if msg.name is not None:
                extra.append(("Mcp-Name", _encode_header_value(msg.name)))
                annotations = self._tool_headers.get(msg.name) if msg.method == "tools/call" else None
                if annotations and msg.arguments is not None:
                    extra.extend(_param_headers(annotations, msg.arguments))
            return self.headers(
                accept=_ACCEPT_BOTH, body=data, version=msg.version, session=False, extra=extra
            )
        return self.headers(accept=_ACCEPT_BOTH, body=data, version=self.protocol_version)
