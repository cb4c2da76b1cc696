"""The ``/authorize`` endpoint of the example authorization server: the
authorization code grant with PKCE (S256 only, required), redirect URI matching
(a loopback one on any port, RFC 8252 7.3) and the redirect carrying ``code``,
``state`` and ``iss`` (RFC 9207), or the error; the codes it made, until the
token endpoint redeems them or they expire.
"""

from __future__ import annotations

import secrets
import time
import urllib.parse
from collections.abc import Sequence
from typing import Any

from mcp_trio.auth import _metadata as md
from mcp_trio.auth._server_http import FormError, first, parse_form
from mcp_trio.transports.http.server import HttpRequest

from ._clients import _ClientRegistry
from ._common import _PKCE_VALUE, OAuthError, _Code, _Forgetting, _is_loopback
from ._policy import _Policy


def _redirect_matches(registered: str, given: str) -> bool:
    """Exact string match, except that a loopback ``http`` URI may use any port
    (RFC 8252 7.3: native apps get an ephemeral port)."""
    if registered == given:
        return True
    try:
        reg, got = urllib.parse.urlsplit(registered), urllib.parse.urlsplit(given)
        if not (_is_loopback(reg) and _is_loopback(got)):
            return False
        reg.port, got.port  # noqa: B018 - validates the ports
    except ValueError:
        return False
    return (reg.hostname, reg.path, reg.query) == (got.hostname, got.path, got.query)


def _with_query(uri: str, params: Sequence[tuple[str, str | None]]) -> str:
    """``uri`` with ``params`` appended to its query (RFC 6749 4.1.2)."""
    extra = urllib.parse.urlencode([(k, v) for k, v in params if v is not None])
    parts = urllib.parse.urlsplit(uri)
    query = f"{parts.query}&{extra}" if parts.query else extra
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


class _Authorizer:
    """The authorization endpoint: checks a request, approves it (as ``subject``, or denies
    it without ``auto_approve``), makes its code (valid ``code_ttl`` seconds), redirects."""

    def __init__(
        self,
        policy: _Policy,
        registry: _ClientRegistry,
        forgetting: _Forgetting,
        *,
        auto_approve: bool,
        subject: str,
        code_ttl: int,
    ) -> None:
        self.policy = policy
        self.registry = registry
        self.forgetting = forgetting
        self.auto_approve = auto_approve
        self.subject = subject
        self.code_ttl = code_ttl
        self._codes: dict[str, _Code] = {}
        forgetting.add(self._forget)

    def code(self, value: str) -> _Code | None:
        """The code ``value`` names (used or not, maybe expired), if it is still kept."""
        return self._codes.get(value)

    def _forget(self, now: float, wall: float) -> None:
        for code in [c for c, v in self._codes.items() if v.expires_at < now - self.code_ttl]:
            del self._codes[code]

    async def authorize(self, request: HttpRequest) -> tuple[int, Any, list[tuple[str, str]]]:
        try:
            query = parse_form(request.query, repeatable=("resource",))
        except FormError as exc:
            raise OAuthError("invalid_request", str(exc)) from None
        client_id = first(query, "client_id")
        client = await self.registry.client(client_id) if client_id else None
        if client is None:
            # Never redirect for an unknown client (RFC 6749 4.1.2.1): the error goes to the user.
            raise OAuthError(
                "invalid_request",
                f"unknown client_id {client_id!r}" if client_id else "client_id is missing",
            )
        redirect_uri = first(query, "redirect_uri")
        given = redirect_uri is not None
        registered = client.redirect_uris or []
        if redirect_uri is None:
            if len(registered) != 1:
                raise OAuthError("invalid_request", "redirect_uri is required")
            redirect_uri = registered[0]
        elif not any(_redirect_matches(r, redirect_uri) for r in registered):
            raise OAuthError("invalid_request", "redirect_uri is not registered for this client")
        state = first(query, "state")
        try:
            code = self._new_code(client, redirect_uri, given, query)
        except OAuthError as exc:
            params = [
                ("error", exc.error),
                ("error_description", exc.description),
                ("state", state),
                ("iss", self.policy.issuer),
            ]
            return 302, None, [("location", _with_query(redirect_uri, params))]
        params = [("code", code), ("state", state), ("iss", self.policy.issuer)]
        return (
            302,
            None,
            [("location", _with_query(redirect_uri, params)), ("cache-control", "no-store")],
        )

    def _new_code(
        self,
        client: md.ClientInformation,
        redirect_uri: str,
        given: bool,
        query: dict[str, list[str]],
    ) -> str:
        """Check an authorization request from a known client and redirect URI;
        its code, or the error to send back to the redirect URI."""
        response_type = first(query, "response_type")
        if response_type is None:
            raise OAuthError("invalid_request", "response_type is missing")
        if response_type != "code":
            raise OAuthError("unsupported_response_type", "only response_type=code is supported")
        if "authorization_code" not in (client.grant_types or []):
            raise OAuthError("unauthorized_client", "this client may not use the authorization code grant")
        challenge = first(query, "code_challenge")
        method = first(query, "code_challenge_method") or "plain"
        if challenge is None:
            raise OAuthError("invalid_request", "PKCE is required: code_challenge is missing")
        if method != "S256":
            raise OAuthError("invalid_request", "code_challenge_method must be S256")
        if not _PKCE_VALUE.match(challenge):
            raise OAuthError("invalid_request", "code_challenge is malformed")
        scopes = self.policy.scopes(first(query, "scope"), self.policy.client_default_scopes(client))
        resources = self.policy.check_resources(query.get("resource", []))
        if not self.auto_approve:
            raise OAuthError("access_denied", "the user denied the request")
        self.forgetting()
        code = secrets.token_urlsafe(32)
        self._codes[code] = _Code(
            client_id=str(client.client_id),
            redirect_uri=redirect_uri,
            challenge=challenge,
            scopes=scopes,
            resources=resources,
            subject=self.subject,
            expires_at=time.monotonic() + self.code_ttl,
            redirect_given=given,
        )
        return code
