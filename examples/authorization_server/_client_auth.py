"""Client authentication at the token, introspection and revocation endpoints
of the example authorization server (RFC 6749 2.3): ``client_secret_basic``,
``client_secret_post``, ``none`` and RFC 7523 ``private_key_jwt``, whose
assertions are each accepted once.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import urllib.parse

from mcp_trio.auth import _metadata as md
from mcp_trio.auth._server_http import first
from mcp_trio.transports.http.server import HttpRequest

from ._clients import _ClientRegistry
from ._common import OAuthError, _Forgetting, _jose
from ._policy import _Policy

CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


class _ClientAuthenticator:
    """Which registered client a request comes from; the ``private_key_jwt`` assertion ids
    seen (until they expire), so that none is accepted twice."""

    def __init__(self, policy: _Policy, registry: _ClientRegistry, forgetting: _Forgetting) -> None:
        self.policy = policy
        self.registry = registry
        self.forgetting = forgetting
        self._seen_assertions: dict[str, float] = {}
        forgetting.add(self._forget)

    def _forget(self, now: float, wall: float) -> None:
        for jti in [j for j, exp in self._seen_assertions.items() if exp < wall]:
            del self._seen_assertions[jti]

    async def authenticate(self, request: HttpRequest, form: dict[str, list[str]]) -> md.ClientInformation:
        """The client a token, introspection or revocation request comes from
        (RFC 6749 2.3; RFC 7523 for ``private_key_jwt``)."""
        header = request.headers.get("authorization")
        used: list[str] = []
        client_id = first(form, "client_id")
        secret: str | None = None
        if header is not None:
            scheme, _, value = header.partition(" ")
            if scheme.lower() != "basic":
                raise OAuthError("invalid_client", "unsupported Authorization scheme", 401)
            try:
                decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                raise OAuthError("invalid_client", "malformed Basic credentials", 401) from None
            raw_id, sep, raw_secret = decoded.partition(":")
            if not sep:
                raise OAuthError("invalid_client", "malformed Basic credentials", 401)
            basic_id = urllib.parse.unquote_plus(raw_id)
            if client_id is not None and client_id != basic_id:
                raise OAuthError("invalid_request", "client_id differs from the Basic credentials")
            client_id, secret = basic_id, urllib.parse.unquote_plus(raw_secret)
            used.append("client_secret_basic")
        if first(form, "client_secret") is not None:
            secret = first(form, "client_secret")
            used.append("client_secret_post")
        assertion = first(form, "client_assertion")
        if assertion is not None or first(form, "client_assertion_type") is not None:
            used.append("private_key_jwt")
        if len(used) > 1:
            raise OAuthError("invalid_request", "use exactly one client authentication method")
        method = used[0] if used else "none"
        if method not in self.policy.auth_methods:
            raise OAuthError("invalid_client", f"{method} client authentication is not accepted here", 401)
        if method == "private_key_jwt":
            client_id = self._assertion_subject(form, client_id)
        if client_id is None:
            raise OAuthError("invalid_client", "no client authentication and no client_id", 401)
        try:
            client = await self.registry.client(client_id)
        except OAuthError as exc:
            raise OAuthError(exc.error, exc.description, 401) from None
        if client is None:
            raise OAuthError("invalid_client", "unknown client", 401)
        if client.token_endpoint_auth_method != method:
            raise OAuthError(
                "invalid_client",
                f"this client authenticates with {client.token_endpoint_auth_method}, not {method}",
                401,
            )
        if method in ("client_secret_basic", "client_secret_post"):
            if not client.client_secret or not hmac.compare_digest(
                str(secret).encode(), client.client_secret.encode()
            ):
                raise OAuthError("invalid_client", "wrong client secret", 401)
        elif method == "private_key_jwt":
            self._verify_assertion(client, str(assertion))
        return client

    def _assertion_subject(self, form: dict[str, list[str]], client_id: str | None) -> str:
        if first(form, "client_assertion_type") != CLIENT_ASSERTION_TYPE:
            raise OAuthError("invalid_client", f"client_assertion_type must be {CLIENT_ASSERTION_TYPE}", 401)
        assertion = first(form, "client_assertion")
        if assertion is None:
            raise OAuthError("invalid_client", "client_assertion is missing", 401)
        jwt = _jose()
        try:
            subject = jwt.decode(assertion, options={"verify_signature": False}).get("sub")
        except jwt.PyJWTError:
            raise OAuthError("invalid_client", "client_assertion is not a JWT", 401) from None
        if not isinstance(subject, str) or (client_id is not None and client_id != subject):
            raise OAuthError("invalid_client", "client_assertion's sub must be the client_id", 401)
        return subject

    def _verify_assertion(self, client: md.ClientInformation, assertion: str) -> None:
        """RFC 7523 3: signed by one of the client's keys, ``iss`` = ``sub`` =
        client_id, audience this server, not expired, never seen before."""
        jwt = _jose()
        try:
            header = jwt.get_unverified_header(assertion)
            keys = [k for k in (client.jwks or {}).get("keys", []) if isinstance(k, dict)]
            kid = header.get("kid")
            candidates = [k for k in keys if kid is None or k.get("kid") == kid]
            if not candidates:
                raise OAuthError("invalid_client", "no registered key matches the client_assertion", 401)
            algorithm = header.get("alg")
            if algorithm not in ("RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"):
                raise OAuthError(
                    "invalid_client",
                    f"client_assertion algorithm {algorithm!r} is not accepted",
                    401,
                )
            claims = None
            for candidate in candidates:
                try:
                    key = jwt.PyJWK(candidate, algorithm=algorithm)
                    claims = jwt.decode(
                        assertion,
                        key.key,
                        algorithms=[algorithm],
                        audience=[self.policy.url(""), self.policy.url("/token")],
                        issuer=str(client.client_id),
                        options={"require": ["exp", "iss", "sub", "aud", "jti"]},
                    )
                    break
                except jwt.InvalidSignatureError:
                    continue
            if claims is None:
                raise OAuthError("invalid_client", "client_assertion signature does not verify", 401)
        except jwt.PyJWTError as exc:
            raise OAuthError("invalid_client", f"client_assertion refused: {exc}", 401) from None
        self.forgetting()
        jti = str(claims["jti"])
        if jti in self._seen_assertions:
            raise OAuthError("invalid_client", "client_assertion was already used", 401)
        self._seen_assertions[jti] = float(claims["exp"])
