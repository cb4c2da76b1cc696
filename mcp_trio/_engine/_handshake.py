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
from ._outgoing import RequestTimeout

if TYPE_CHECKING:
    from ._session import Session


class ClientHandshake:
    """A client session's settling of the protocol (made for one ``connect()`` or
    ``initialize()`` call: it holds nothing but the session)."""

    __slots__ = ("session", "core")

    def __init__(self, session: Session) -> None:
        self.session = session
        self.core = session.core

    async def initialize(self, *, version: str | None = None, timeout: Any = _DEFAULT) -> Any:
        """See :meth:`mcp_trio.Session.initialize`."""
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
            result = await self.session.request("initialize", params, timeout=timeout)
        except RemoteProtocolError as exc:
            session = self.session
            session._close(f"the handshake failed: {exc}")
            with trio.move_on_after(2 * session.close_grace):
                await session.closed.wait()
            raise
        await self.session.notify("notifications/initialized")
        self.session.initialized.set()
        return result

    async def connect(self, *, probe_timeout: float = 5.0, timeout: Any = _DEFAULT) -> str:
        """See :meth:`mcp_trio.Session.connect`."""
        core = self.core
        if core.modern_versions:
            preferred = core.modern_versions[0]
            core.use_modern(preferred)
            try:
                result = await self.session.request("server/discover", timeout=probe_timeout)
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
                    self.session.initialized.set()
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
        result = await self.session.request("server/discover", timeout=timeout)
        self._adopt_discover(version, result)
        self.session.initialized.set()
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
