"""The state of the example authorization server that its parts share, declared,
and the request helpers every endpoint uses: its URLs, the form body, scope and
resource checks, and the forgetting of expired codes, assertions and tokens.

``AuthorizationServer.__init__`` (in ``_server.py``) sets every attribute named
here; each part's mixin (``_clients``, ``_authorize``, ``_tokens``) derives from
:class:`_ServerBase`, which also names, for the type checker only, the methods
one part calls on another.
"""

from __future__ import annotations

import re
import time
import urllib.parse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mcp_trio.auth import _metadata as md
from mcp_trio.auth._client_http import OAuthHttp
from mcp_trio.auth._server_http import FormError, parse_form
from mcp_trio.transports.http.server import HttpRequest

from ._common import OAuthError, _Code, _Grant, _SigningKey

_SCOPE_TOKEN = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]+$")  # RFC 6749 3.3 scope-token


def _check_resource(uri: str) -> str | None:
    """Why ``uri`` is not an RFC 8707 resource indicator, or ``None``."""
    try:
        parts = urllib.parse.urlsplit(uri)
    except ValueError:
        return f"{uri!r} is not a URI"
    if not parts.scheme or "#" in uri:
        return f"{uri!r} must be an absolute URI without a fragment"
    return None


class _ServerBase:
    """The state the parts of :class:`AuthorizationServer` share (set by its
    ``__init__``; declared here), the helpers they all use, and the methods one
    part calls on another, for the type checker."""

    # settings
    issuer: str | None
    scopes_supported: list[str] | None
    default_scopes: list[str]
    resources: list[str] | None
    default_resource: str | None
    auto_approve: bool
    subject: str
    access_token_ttl: int
    refresh_token_ttl: int
    code_ttl: int
    algorithm: str
    allow_registration: bool
    auth_methods: list[str]
    max_clients: int
    allow_http_client_documents: bool
    # clients
    clients: dict[str, md.ClientInformation]
    _preregistered: set[str]
    _documents: dict[str, tuple[float, md.ClientInformation]]
    _http: OAuthHttp
    _seen_assertions: dict[str, float]
    # codes, grants and tokens
    _codes: dict[str, _Code]
    _grants_by_refresh: dict[str, _Grant]
    _grants_by_token: dict[str, _Grant]
    _token_expiry: dict[str, float]
    _expired_at: float
    _keys: list[_SigningKey]

    if TYPE_CHECKING:
        # _clients
        async def _client(self, client_id: str) -> md.ClientInformation | None: ...

        async def _authenticate(
            self, request: HttpRequest, form: dict[str, list[str]]
        ) -> md.ClientInformation: ...

    def _url(self, path: str) -> str:
        if self.issuer is None:
            raise RuntimeError("the authorization server has no issuer yet (serve() sets it)")
        return self.issuer + path

    def _form(self, request: HttpRequest) -> dict[str, list[str]]:
        content_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        if content_type != "application/x-www-form-urlencoded":
            raise OAuthError("invalid_request", "the body must be application/x-www-form-urlencoded")
        try:
            return parse_form(request.body, repeatable=("resource",))
        except FormError as exc:
            raise OAuthError("invalid_request", str(exc)) from None

    def _scopes(
        self, requested: str | None, fallback: Sequence[str], error: str = "invalid_scope"
    ) -> list[str]:
        """The scopes a request asks for (``fallback`` when it names none), checked."""
        if requested is None:
            return list(fallback)
        scopes = requested.split(" ")
        bad = [s for s in scopes if not _SCOPE_TOKEN.match(s)]
        if bad:
            raise OAuthError(error, f"malformed scope {bad[0]!r}")
        if self.scopes_supported is not None:
            unknown = [s for s in scopes if s not in self.scopes_supported]
            if unknown:
                raise OAuthError(error, f"unknown scope {unknown[0]!r}")
        return list(dict.fromkeys(scopes))

    def _client_default_scopes(self, client: md.ClientInformation) -> list[str]:
        return client.scope.split() if client.scope else list(self.default_scopes)

    def _check_resources(self, resources: Sequence[str]) -> list[str]:
        for resource in resources:
            problem = _check_resource(resource)
            if problem is not None:
                raise OAuthError("invalid_target", problem)
            if self.resources is not None and resource not in self.resources:
                raise OAuthError("invalid_target", f"no tokens are issued for {resource!r}")
        return list(dict.fromkeys(resources))

    def _expire(self) -> None:
        """Forget what can no longer be used: expired codes, assertion ids and
        access tokens, and refresh tokens of ended grants (so memory follows
        the live state, not the server's age).  At most once a second."""
        now = time.monotonic()
        if now - self._expired_at < 1.0:
            return
        self._expired_at = now
        wall = time.time()
        for code in [c for c, v in self._codes.items() if v.expires_at < now - self.code_ttl]:
            del self._codes[code]
        for jti in [j for j, exp in self._seen_assertions.items() if exp < wall]:
            del self._seen_assertions[jti]
        for jti in [j for j, exp in self._token_expiry.items() if exp < wall]:
            del self._token_expiry[jti]
            self._grants_by_token.pop(jti, None)
        for value, grant in list(self._grants_by_refresh.items()):
            if grant.revoked or grant.refresh_expires_at < wall:
                del self._grants_by_refresh[value]
