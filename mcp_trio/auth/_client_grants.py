"""The OAuth client's grants (step 3 of :mod:`mcp_trio.auth.client`) and the token
requests they make (:class:`Flow`).

Rules:

* The authorization code grant uses PKCE S256 (refused when the server does
  not advertise it), a fresh ``state`` and the RFC 9207 ``iss`` check.
* Every authorization and token request names the ``resource`` (RFC 8707).
* Token requests carry client authentication and, when DPoP is on, a proof,
  retried once with the server's ``DPoP-Nonce`` if it asks for one; only
  ``Bearer`` and ``DPoP`` tokens are taken.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Protocol

from ..transports.http.client._http11 import Failure
from ._client_discovery import (
    AuthorizationError,
    Discovery,
    _error_text,
    _guard,
    _oauth_error,
)
from ._client_http import HttpReply
from ._client_redirect import LoopbackRedirect, RedirectError, RedirectHandler
from ._metadata import ClientInformation, MetadataError, TokenResponse, decode

if TYPE_CHECKING:
    from .client import OAuthClient

GRANT_JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
GRANT_TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
TOKEN_TYPE_ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
TOKEN_TYPE_ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


class Grant(Protocol):
    """How an access token is obtained once discovery is done."""

    #: Grant types to register (RFC 7591 ``grant_types``).
    grant_types: list[str]

    def redirect_uris(self) -> list[str] | None: ...

    async def obtain(self, flow: Flow) -> TokenResponse: ...


class AuthorizationCodeGrant:
    """The authorization code grant with PKCE S256 (the interactive default)."""

    grant_types = ["authorization_code", "refresh_token"]

    def __init__(self, redirect: RedirectHandler | None = None) -> None:
        self.redirect: RedirectHandler = redirect or LoopbackRedirect()

    def redirect_uris(self) -> list[str] | None:
        return [self.redirect.redirect_uri]

    async def obtain(self, flow: Flow) -> TokenResponse:
        meta = flow.discovery.metadata
        if not flow.discovery.fallback_endpoints and "S256" not in (
            meta.code_challenge_methods_supported or []
        ):
            raise AuthorizationError(
                f"the authorization server {flow.discovery.issuer!r} does not advertise PKCE "
                "S256 (code_challenge_methods_supported); refusing to authorize"
            )
        if not meta.authorization_endpoint or not meta.token_endpoint:
            raise AuthorizationError("the authorization server has no authorization or token endpoint")
        _guard(flow.owner.http, meta.authorization_endpoint, "the authorization endpoint")
        client = await flow.client()
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
        state = secrets.token_urlsafe(24)
        params = {
            "response_type": "code",
            "client_id": client.client_id or "",
            "redirect_uri": self.redirect.redirect_uri,
            "code_challenge": challenge.rstrip(b"=").decode(),
            "code_challenge_method": "S256",
            "state": state,
            "resource": flow.discovery.resource,
        }
        if flow.scope:
            params["scope"] = flow.scope
        separator = "&" if "?" in meta.authorization_endpoint else "?"
        url = meta.authorization_endpoint + separator + urllib.parse.urlencode(params)
        try:
            answer = await self.redirect.authorize(url)
        except (RedirectError, Failure, ValueError) as exc:
            raise AuthorizationError(f"authorization step failed: {exc}") from None
        code = self._check_answer(answer, state, flow.discovery)
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect.redirect_uri,
            "code_verifier": verifier,
            "resource": flow.discovery.resource,
        }
        return await flow.token_request(form, client)

    @staticmethod
    def _check_answer(answer: Mapping[str, str], state: str, discovery: Discovery) -> str:
        """The code of a redirect that passes the ``state`` and RFC 9207 ``iss`` checks."""
        if not hmac.compare_digest(answer.get("state", ""), state):
            raise AuthorizationError("the authorization response's state does not match")
        iss = answer.get("iss")
        if iss is None and discovery.metadata.authorization_response_iss_parameter_supported:
            raise AuthorizationError(
                "the authorization server promised an iss parameter (RFC 9207) "
                "but the authorization response has none"
            )
        if iss is not None and iss != discovery.issuer:
            raise AuthorizationError(
                f"the authorization response comes from {iss!r}, "
                f"not from the issuer {discovery.issuer!r} (RFC 9207)"
            )
        if "error" in answer:
            detail = answer.get("error_description")
            raise AuthorizationError(
                f"authorization refused: {answer['error']}" + (f" ({detail})" if detail else "")
            )
        code = answer.get("code")
        if not code:
            raise AuthorizationError("the authorization response has no code")
        return code


class _NoRedirect:
    """A grant without a browser step: nothing to register as ``redirect_uris``."""

    def redirect_uris(self) -> list[str] | None:
        return None


class ClientCredentialsGrant(_NoRedirect):
    """``client_credentials``: the client acts for itself (needs a pre-registered client)."""

    grant_types = ["client_credentials"]

    async def obtain(self, flow: Flow) -> TokenResponse:
        form = {"grant_type": "client_credentials", "resource": flow.discovery.resource}
        if flow.scope:
            form["scope"] = flow.scope
        return await flow.token_request(form, await flow.client())


class JwtBearerGrant(_NoRedirect):
    """RFC 7523 JWT bearer grant with an assertion you supply (e.g. a workload
    identity token).  A refusal is reported, never retried with another grant."""

    grant_types = [GRANT_JWT_BEARER]

    def __init__(self, assertion: str | Callable[[], Awaitable[str]]) -> None:
        self._assertion = assertion

    async def obtain(self, flow: Flow) -> TokenResponse:
        return await _jwt_bearer(flow, await _resolve(self._assertion))


class EnterpriseGrant(_NoRedirect):
    """Enterprise-managed authorization: the identity provider exchanges the
    user's ID token for an identity assertion grant (RFC 8693 token exchange),
    which the MCP authorization server takes as a JWT bearer grant (RFC 7523)."""

    grant_types = [GRANT_JWT_BEARER]

    def __init__(
        self,
        *,
        idp_token_endpoint: str,
        id_token: str | Callable[[], Awaitable[str]],
        idp_client_id: str | None = None,
        idp_client_secret: str | None = None,
    ) -> None:
        self.idp_token_endpoint = idp_token_endpoint
        self._id_token = id_token
        self.idp_client_id = idp_client_id
        self.idp_client_secret = idp_client_secret

    async def obtain(self, flow: Flow) -> TokenResponse:
        id_token = await _resolve(self._id_token)
        exchange = {
            "grant_type": GRANT_TOKEN_EXCHANGE,
            "subject_token": id_token,
            "subject_token_type": TOKEN_TYPE_ID_TOKEN,
            "requested_token_type": TOKEN_TYPE_ID_JAG,
            "audience": flow.discovery.issuer,
            "resource": flow.discovery.resource,
        }
        if flow.scope:
            exchange["scope"] = flow.scope
        if self.idp_client_id:
            exchange["client_id"] = self.idp_client_id
        if self.idp_client_secret:
            exchange["client_secret"] = self.idp_client_secret
        reply = await flow.post(self.idp_token_endpoint, exchange, {})
        if not reply.ok:
            raise AuthorizationError(
                f"the identity provider refused the token exchange: {_error_text(reply)}"
            )
        try:
            grant = decode(reply.body, TokenResponse)
        except MetadataError as exc:
            raise AuthorizationError(f"bad token exchange response: {exc}") from None
        return await _jwt_bearer(flow, grant.access_token)


async def _resolve(value: str | Callable[[], Awaitable[str]]) -> str:
    """An assertion or ID token given as such or as an async function returning it."""
    return value if isinstance(value, str) else await value()


async def _jwt_bearer(flow: Flow, assertion: str) -> TokenResponse:
    """The RFC 7523 JWT bearer token request for ``assertion``."""
    form = {
        "grant_type": GRANT_JWT_BEARER,
        "assertion": assertion,
        "resource": flow.discovery.resource,
    }
    if flow.scope:
        form["scope"] = flow.scope
    return await flow.token_request(form, await flow.client())


# ------------------------------------------------------------------- flows


class Flow:
    """One authorization attempt: discovery results, the scope asked for, and
    the token requests (client authentication, DPoP) made for it."""

    def __init__(self, owner: OAuthClient, discovery: Discovery, scope: str | None) -> None:
        self.owner = owner
        self.discovery = discovery
        self.scope = scope

    async def client(self) -> ClientInformation:
        return await self.owner._client_for(self.discovery)

    async def post(self, url: str, form: dict[str, str], headers: dict[str, str]) -> HttpReply:
        try:
            return await self.owner.http.request("POST", url, form=form, headers=headers)
        except (Failure, ValueError) as exc:
            raise AuthorizationError(f"POST {url} failed: {exc}") from None

    async def token_request(self, form: dict[str, str], client: ClientInformation) -> TokenResponse:
        """POST to the token endpoint with client authentication (and a DPoP
        proof, retried once with the server's nonce if it asks for one)."""
        endpoint = self.discovery.metadata.token_endpoint
        if not endpoint:
            raise AuthorizationError("the authorization server has no token endpoint")
        reply: HttpReply | None = None
        for _ in range(2):
            body, headers = self.owner._authenticate(self.discovery, client, form)
            dpop = self.owner._dpop_key(self.discovery)
            if dpop is not None:
                headers["DPoP"] = dpop.proof("POST", endpoint, nonce=self.owner._as_nonce)
            reply = await self.post(endpoint, body, headers)
            nonce = reply.headers.get("dpop-nonce")
            if (
                dpop is not None
                and nonce
                and _oauth_error(reply) == "use_dpop_nonce"
                and nonce != self.owner._as_nonce
            ):
                self.owner._as_nonce = nonce
                continue
            break
        assert reply is not None
        if not reply.ok:
            raise AuthorizationError(
                f"the token endpoint refused the {form['grant_type']} request: {_error_text(reply)}",
                error=_oauth_error(reply),
            )
        try:
            token = decode(reply.body, TokenResponse)
        except MetadataError as exc:
            raise AuthorizationError(f"bad token response: {exc}") from None
        if token.token_type.lower() not in ("bearer", "dpop"):
            raise AuthorizationError(f"unsupported token type {token.token_type!r}")
        return token
