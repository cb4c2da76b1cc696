"""A client's settling of the protocol with the server: the era probe
(``server/discover``) and the legacy ``initialize`` handshake.

Rules: with a stateless revision allowed the client probes first; a server
that answers is modern, an ``UnsupportedProtocolVersionError`` names the
versions to retry with, anything else is legacy and gets ``initialize``.  A
client that cannot accept the server's ``initialize`` answer closes the
session before it raises.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from .. import _jsonrpc as rpc
from .._exceptions import LocalProtocolError, McpError, RemoteProtocolError
from ._common import _DEFAULT
from ._outgoing import RequestTimeout, _Outgoing


class _Handshake(_Outgoing):
    """The client's handshake methods of :class:`~mcp_trio.Session` (a mixin of it)."""

    initialized: trio.Event
    closed: trio.Event

    if TYPE_CHECKING:

        def _stop(self) -> None: ...

    async def initialize(self, *, version: str | None = None, timeout: Any = _DEFAULT) -> Any:
        """Client: the legacy ``initialize`` handshake, then ``notifications/initialized``.

        Returns the ``InitializeResult``.

        Raises:
            RemoteProtocolError: the server answered a version this client does
                not accept (or not an ``InitializeResult``).  The session is
                closed first: the client disconnects, as the specification asks.
        """
        core = self.core
        version = version or (core.legacy_versions[0] if core.legacy_versions else None)
        if version is None:
            raise LocalProtocolError("this client accepts no protocol version with a handshake")
        params = {
            "protocolVersion": version,
            "capabilities": core.capabilities,
            "clientInfo": core.info,
        }
        try:
            result = await self.request("initialize", params, timeout=timeout)
        except RemoteProtocolError as exc:
            self._close_reason = f"the handshake failed: {exc}"
            self._stop()
            with trio.move_on_after(2 * self.close_grace):
                await self.closed.wait()
            raise
        await self.notify("notifications/initialized")
        self.initialized.set()
        return result

    async def connect(self, *, probe_timeout: float = 5.0, timeout: Any = _DEFAULT) -> str:
        """Client: settle the protocol era and version with the server.

        With a stateless (2026-07-28+) version allowed, probes with
        ``server/discover``; a server that answers it is modern, one that
        names its supported versions in an ``UnsupportedProtocolVersionError``
        is modern with another version, anything else (another error, an
        answer that is not a valid ``DiscoverResult``, or no answer within
        ``probe_timeout``) is legacy and gets ``initialize``.  If
        that ``initialize`` is refused with an ``UnsupportedProtocolVersionError``
        naming a stateless version we accept (a server that was only slow to
        answer the probe), the client goes modern after all.

        Returns:
            The negotiated protocol version.
        """
        core = self.core
        if core.modern_versions:
            preferred = core.modern_versions[0]
            core.use_modern(preferred)
            try:
                result = await self.request("server/discover", timeout=probe_timeout)
            except McpError as exc:
                supported = exc.data.get("supported") if isinstance(exc.data, dict) else None
                if exc.code == rpc.UNSUPPORTED_PROTOCOL_VERSION and isinstance(supported, list):
                    common = self._modern_in(exc)
                    if common:
                        return await self._use_discovered(common[0], timeout)
                    core.reset_era()
                    if not any(v in supported for v in core.legacy_versions):
                        raise LocalProtocolError(
                            f"no protocol version in common: server supports {supported}, "
                            f"client {list(core.versions)}"
                        ) from None
                else:
                    core.reset_era()
            except (RequestTimeout, RemoteProtocolError):
                # No answer in time, or an answer that is not a DiscoverResult
                # (servers that answer every unknown method with ``{}``).
                core.reset_era()
            else:
                supported = list(result.supportedVersions)
                common = [v for v in core.modern_versions if v in supported]
                if common:
                    self._adopt_discover(common[0], result)
                    self.initialized.set()
                    return common[0]
                core.reset_era()
        if not core.legacy_versions:
            raise LocalProtocolError("the server does not speak a protocol version this client accepts")
        try:
            await self.initialize(timeout=timeout)
        except McpError as exc:
            # A server slow to start may answer the probe after it timed out and
            # then refuse ``initialize`` as a modern server does: take its word.
            common = self._modern_in(exc)
            if not common:
                raise
            return await self._use_discovered(common[0], timeout)
        assert core.version is not None
        return core.version

    def _modern_in(self, exc: McpError) -> list[str]:
        """The stateless versions we accept that an UnsupportedProtocolVersion error lists."""
        if exc.code != rpc.UNSUPPORTED_PROTOCOL_VERSION or not isinstance(exc.data, dict):
            return []
        supported = exc.data.get("supported")
        if not isinstance(supported, list):
            return []
        return [v for v in self.core.modern_versions if v in supported]

    async def _use_discovered(self, version: str, timeout: Any) -> str:
        self.core.use_modern(version)
        result = await self.request("server/discover", timeout=timeout)
        self._adopt_discover(version, result)
        self.initialized.set()
        return version

    def _adopt_discover(self, version: str, result: Any) -> None:
        meta = getattr(result, "meta", None)
        info = meta.get("io.modelcontextprotocol/serverInfo") if isinstance(meta, dict) else None
        instructions = getattr(result, "instructions", None)
        self.core.use_modern(
            version,
            server_capabilities=result.capabilities,
            server_info=info if isinstance(info, dict) else None,
            instructions=instructions if isinstance(instructions, str) else None,
        )
