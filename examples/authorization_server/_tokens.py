"""Tokens of the example authorization server: the ``/token`` endpoint
(``authorization_code`` with the PKCE verifier check, ``refresh_token`` rotated
at every use, ``client_credentials``), RFC 8707 resource narrowing, the signed
JWT access tokens (RFC 9068) and the grants they hang off, introspection
(RFC 7662) and revocation (RFC 7009).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from typing import Any

from mcp_trio.auth import _metadata as md
from mcp_trio.auth._server_http import NO_STORE, first
from mcp_trio.transports.http.server import HttpRequest

from ._authorize import _Authorizer
from ._client_auth import _ClientAuthenticator
from ._common import _PKCE_VALUE, GRANT_TYPES, OAuthError, _Forgetting, _Grant, _required
from ._keys import _KeyRing
from ._policy import _Policy


def _b64url_sha256(value: str) -> str:
    digest = hashlib.sha256(value.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class _Tokens:
    """The token endpoint, the access tokens it signs (valid ``access_token_ttl`` seconds),
    introspection and revocation; the grants behind live access and refresh tokens (these
    valid ``refresh_token_ttl`` seconds), so that revoking a grant ends them all."""

    def __init__(
        self,
        policy: _Policy,
        authenticator: _ClientAuthenticator,
        authorizer: _Authorizer,
        signing: _KeyRing,
        forgetting: _Forgetting,
        *,
        access_token_ttl: int,
        refresh_token_ttl: int,
    ) -> None:
        self.policy = policy
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.signing = signing
        self.forgetting = forgetting
        self.access_token_ttl = access_token_ttl
        self.refresh_token_ttl = refresh_token_ttl
        self._grants_by_refresh: dict[str, _Grant] = {}
        self._grants_by_token: dict[str, _Grant] = {}
        self._token_expiry: dict[str, float] = {}
        forgetting.add(self._forget)

    def _forget(self, now: float, wall: float) -> None:
        for jti in [j for j, exp in self._token_expiry.items() if exp < wall]:
            del self._token_expiry[jti]
            self._grants_by_token.pop(jti, None)
        for value, grant in list(self._grants_by_refresh.items()):
            if grant.revoked or grant.refresh_expires_at < wall:
                del self._grants_by_refresh[value]

    # ---------------------------------------------------------------- token

    async def token(self, request: HttpRequest) -> tuple[int, Any, list[tuple[str, str]]]:
        form = self.policy.form(request)
        client = await self.authenticator.authenticate(request, form)
        grant_type = _required(form, "grant_type")
        if grant_type not in GRANT_TYPES:
            raise OAuthError("unsupported_grant_type", f"grant_type {grant_type!r} is not supported")
        if grant_type not in (client.grant_types or []):
            raise OAuthError("unauthorized_client", f"this client may not use the {grant_type} grant")
        if grant_type == "authorization_code":
            document = self._redeem_code(client, form)
        elif grant_type == "refresh_token":
            document = self._refresh(client, form)
        else:
            document = self._client_credentials(client, form)
        return 200, document, list(NO_STORE)

    def _redeem_code(self, client: md.ClientInformation, form: dict[str, list[str]]) -> dict[str, Any]:
        code_value = _required(form, "code")
        verifier = _required(form, "code_verifier", " (PKCE is required)")
        code = self.authorizer.code(code_value)
        if code is None or code.client_id != client.client_id:
            raise OAuthError("invalid_grant", "unknown authorization code")
        if code.used:
            # A replayed code: revoke what its first use obtained (RFC 6749 4.1.2).
            if code.grant is not None:
                self._revoke_grant(code.grant)
            raise OAuthError("invalid_grant", "the authorization code was already used")
        if time.monotonic() > code.expires_at:
            raise OAuthError("invalid_grant", "the authorization code has expired")
        redirect_uri = first(form, "redirect_uri")
        if redirect_uri != code.redirect_uri and (code.redirect_given or redirect_uri is not None):
            raise OAuthError("invalid_grant", "redirect_uri does not match the authorization request")
        if not _PKCE_VALUE.match(verifier) or not hmac.compare_digest(
            _b64url_sha256(verifier), code.challenge
        ):
            raise OAuthError("invalid_grant", "code_verifier does not match the code_challenge")
        resources = self._narrow_resources(form, code.resources)
        code.used = True
        grant = _Grant(
            client_id=code.client_id,
            subject=code.subject,
            scopes=code.scopes,
            resources=code.resources,
        )
        code.grant = grant
        return self._token_response(client, grant, grant.scopes, resources)

    def _narrow_resources(self, form: dict[str, list[str]], granted: list[str]) -> list[str]:
        """The token request's ``resource`` values: none means all granted ones;
        each must be one the grant covers (RFC 8707 2.2)."""
        asked = self.policy.check_resources(form.get("resource", []))
        if not asked:
            return granted
        if granted:
            outside = [r for r in asked if r not in granted]
            if outside:
                raise OAuthError("invalid_target", f"{outside[0]!r} was not part of the authorization")
        return asked

    def _refresh(self, client: md.ClientInformation, form: dict[str, list[str]]) -> dict[str, Any]:
        value = _required(form, "refresh_token")
        grant = self._grants_by_refresh.get(value)
        if grant is None or grant.client_id != client.client_id:
            raise OAuthError("invalid_grant", "unknown refresh token")
        if grant.revoked:
            raise OAuthError("invalid_grant", "the grant was revoked")
        if value in grant.retired:
            # Rotation: an old refresh token coming back means it leaked; end the grant.
            self._revoke_grant(grant)
            raise OAuthError("invalid_grant", "the refresh token was already used")
        if time.time() > grant.refresh_expires_at:
            raise OAuthError("invalid_grant", "the refresh token has expired")
        scopes = self.policy.scopes(first(form, "scope"), grant.scopes)
        wider = [s for s in scopes if s not in grant.scopes]
        if wider:
            raise OAuthError("invalid_scope", f"scope {wider[0]!r} was not granted")
        resources = self._narrow_resources(form, grant.resources)
        grant.retired.add(value)
        return self._token_response(client, grant, scopes, resources)

    def _client_credentials(self, client: md.ClientInformation, form: dict[str, list[str]]) -> dict[str, Any]:
        scopes = self.policy.scopes(first(form, "scope"), self.policy.client_default_scopes(client))
        resources = self.policy.check_resources(form.get("resource", []))
        grant = _Grant(
            client_id=str(client.client_id),
            subject=str(client.client_id),
            scopes=scopes,
            resources=resources,
        )
        return self._token_response(client, grant, scopes, resources, refresh=False)

    def _token_response(
        self,
        client: md.ClientInformation,
        grant: _Grant,
        scopes: list[str],
        resources: list[str],
        *,
        refresh: bool = True,
    ) -> dict[str, Any]:
        token, expires_in = self.access_token(grant, scopes, resources, None, None)
        document: dict[str, Any] = {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": expires_in,
        }
        if scopes:
            document["scope"] = " ".join(scopes)
        if refresh and "refresh_token" in (client.grant_types or []):
            value = secrets.token_urlsafe(32)
            grant.refresh_token = value
            grant.refresh_expires_at = time.time() + self.refresh_token_ttl
            self._grants_by_refresh[value] = grant
            document["refresh_token"] = value
        return document

    def access_token(
        self,
        grant: _Grant,
        scopes: list[str],
        resources: list[str],
        expires_in: int | None,
        claims: dict[str, Any] | None,
    ) -> tuple[str, int]:
        now = int(time.time())
        lifetime = self.access_token_ttl if expires_in is None else expires_in
        audience: str | list[str] = resources if len(resources) != 1 else resources[0]
        if not resources:
            audience = self.policy.default_resource or self.policy.url("")
        jti = secrets.token_urlsafe(16)
        body: dict[str, Any] = {
            "iss": self.policy.url(""),
            "sub": grant.subject,
            "aud": audience,
            "client_id": grant.client_id,
            "iat": now if lifetime > 0 else now + lifetime - 60,
            "exp": now + lifetime,
            "jti": jti,
        }
        if scopes:
            body["scope"] = " ".join(scopes)
        body.update(claims or {})
        self.forgetting()
        self._grants_by_token[jti] = grant
        self._token_expiry[jti] = body["exp"] if isinstance(body["exp"], int | float) else now
        return self.signing.sign(body), lifetime

    # ------------------------------------------ introspection and revocation

    def _token_grant(self, token: str) -> tuple[dict[str, Any], _Grant] | None:
        """The claims and grant of one of its own live access tokens."""
        claims = self.signing.verify(token, lambda: self.policy.url(""))
        if claims is None:
            return None
        grant = self._grants_by_token.get(str(claims["jti"]))
        if grant is None or grant.revoked:
            return None
        return claims, grant

    async def introspect(self, request: HttpRequest) -> tuple[int, Any, list[tuple[str, str]]]:
        form = self.policy.form(request)
        client = await self.authenticator.authenticate(request, form)
        if client.token_endpoint_auth_method == "none":
            raise OAuthError(
                "invalid_client", "introspection needs an authenticated (confidential) client", 401
            )
        token = _required(form, "token")
        found = self._token_grant(token)
        if found is not None:
            claims, _ = found
            document = {
                k: v
                for k, v in claims.items()
                if k in ("scope", "client_id", "sub", "aud", "iss", "exp", "iat", "nbf", "jti")
            }
            return 200, {"active": True, "token_type": "Bearer", **document}, list(NO_STORE)
        grant = self._grants_by_refresh.get(token)
        if (
            grant is not None
            and not grant.revoked
            and token not in grant.retired
            and time.time() < grant.refresh_expires_at
        ):
            document = {
                "active": True,
                "token_type": "refresh_token",
                "client_id": grant.client_id,
                "sub": grant.subject,
                "scope": " ".join(grant.scopes),
                "exp": int(grant.refresh_expires_at),
                "iss": self.policy.url(""),
            }
            return 200, document, list(NO_STORE)
        return 200, {"active": False}, list(NO_STORE)

    async def revoke(self, request: HttpRequest) -> tuple[int, Any, list[tuple[str, str]]]:
        form = self.policy.form(request)
        client = await self.authenticator.authenticate(request, form)
        token = _required(form, "token")
        grant = self._grants_by_refresh.get(token)
        found = self._token_grant(token)
        if grant is None and found is not None:
            grant = found[1]
        # RFC 7009 2.2: an unknown token, or another client's, is answered 200 all the same.
        if grant is not None and grant.client_id == client.client_id:
            self._revoke_grant(grant)
        return 200, {}, list(NO_STORE)

    def _revoke_grant(self, grant: _Grant) -> None:
        grant.revoked = True
