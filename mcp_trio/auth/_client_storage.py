"""What the OAuth client keeps: :class:`Tokens`, and where it keeps them and its client
registrations between connections (:class:`TokenStorage`, :class:`InMemoryTokenStorage`).

A token counts as expired ``_EXPIRY_MARGIN`` seconds before it does, so it is
refreshed before the server would refuse it.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

import msgspec

from ._metadata import ClientInformation

_V = TypeVar("_V")
_EXPIRY_MARGIN = 30.0  # seconds before expiry at which a token is refreshed


class Tokens(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What a token response left: enough to present, refresh and re-check it."""

    access_token: str
    token_type: str = "Bearer"
    refresh_token: str | None = None
    scope: str | None = None
    expires_at: float | None = None
    issuer: str | None = None

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and now >= self.expires_at - _EXPIRY_MARGIN


class TokenStorage(Protocol):
    """Where tokens (per MCP server) and client registrations (per authorization
    server issuer) are kept between connections."""

    async def load_tokens(self, server: str) -> Tokens | None: ...

    async def save_tokens(self, server: str, tokens: Tokens | None) -> None: ...

    async def load_client(self, issuer: str) -> ClientInformation | None: ...

    async def save_client(self, issuer: str, client: ClientInformation | None) -> None: ...


class InMemoryTokenStorage:
    """The default storage: dictionaries, gone with the process."""

    def __init__(self) -> None:
        self.tokens: dict[str, Tokens] = {}
        self.clients: dict[str, ClientInformation] = {}

    async def load_tokens(self, server: str) -> Tokens | None:
        return self.tokens.get(server)

    async def save_tokens(self, server: str, tokens: Tokens | None) -> None:
        _put(self.tokens, server, tokens)

    async def load_client(self, issuer: str) -> ClientInformation | None:
        return self.clients.get(issuer)

    async def save_client(self, issuer: str, client: ClientInformation | None) -> None:
        _put(self.clients, issuer, client)


def _put(table: dict[str, _V], key: str, value: _V | None) -> None:
    """Keep ``value`` under ``key``; ``None`` forgets it."""
    if value is None:
        table.pop(key, None)
    else:
        table[key] = value
