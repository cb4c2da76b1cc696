"""The OAuth 2.1 client side of MCP authorization, for the Streamable HTTP client.

:class:`OAuthClient` plugs into :func:`mcp_trio.client.connect_http` (or
:func:`mcp_trio.transports.http.client.open_http_client`) as ``auth=``::

    auth = OAuthClient(client_metadata=ClientMetadata(client_name="my app"))
    async with connect_http("https://example.com/mcp", auth=auth) as client:
        ...

It adds the ``Authorization`` (and ``DPoP``) header to every request and is
told about 401/403 answers; the transport sends the request again once it
has (re)authorized.  The MCP session never sees any of it.

What happens on a 401:

1. **Discovery.** The protected resource metadata (RFC 9728) is read from the
   challenge's ``resource_metadata`` or the well-known URLs (path-suffixed,
   then root); its ``resource`` must match the server URL.  The first of its
   ``authorization_servers`` is the issuer, whose metadata (RFC 8414 or
   OpenID Connect discovery, in the spec's order) must name that same
   ``issuer``.  Servers that publish no resource metadata (2025-03-26) get
   the issuer at their origin, and ``/authorize``, ``/token``, ``/register``
   when that has no metadata either.
2. **Client identity**, per issuer (never reused with another): a
   pre-registered client, a Client ID Metadata Document URL (when the
   authorization server supports them), or dynamic registration (RFC 7591).
3. **A grant**: the authorization code grant with PKCE S256, ``state`` and
   RFC 9207 ``iss`` checks (:class:`AuthorizationCodeGrant`, the default),
   ``client_credentials``, a JWT bearer assertion (RFC 7523), or the
   enterprise-managed token exchange (:class:`EnterpriseGrant`).  Every
   authorization and token request names the ``resource`` (RFC 8707).
   A refresh token is used first when there is one.

On a 403 ``insufficient_scope`` the client asks for the union of the scopes
it had and the ones challenged, a bounded number of times, and gives up when
the challenge asks for nothing new.  Scopes come from the challenge, else the
resource metadata's ``scopes_supported``, else none are sent;
``offline_access`` is added when the authorization server lists it.

DPoP (RFC 9449) is used when the authorization server advertises ES256 for it
(or ``dpop=True``): token requests and MCP requests carry fresh proofs,
server nonces are honoured, and tokens are presented with the ``DPoP``
scheme.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol, TypeVar

import msgspec
import trio

from ..transports.http._http11 import Failure
from ._client_http import HttpReply, OAuthHttp
from ._client_jose import JWT_BEARER_ASSERTION, DPoPKey, client_assertion, load_private_key
from ._client_redirect import HeadlessRedirect, LoopbackRedirect, RedirectError, RedirectHandler
from ._metadata import (
    AuthorizationServerMetadata,
    ClientInformation,
    ClientMetadata,
    MetadataError,
    OAuthErrorResponse,
    ProtectedResourceMetadata,
    TokenResponse,
    authorization_server_metadata_urls,
    canonical_resource,
    decode,
    parse_www_authenticate,
    protected_resource_metadata_urls,
    resource_matches,
)

__all__ = [
    "AuthorizationCodeGrant",
    "AuthorizationError",
    "ClientCredentialsGrant",
    "ClientInformation",
    "ClientMetadata",
    "EnterpriseGrant",
    "Grant",
    "HeadlessRedirect",
    "InMemoryTokenStorage",
    "JwtBearerGrant",
    "LoopbackRedirect",
    "OAuthClient",
    "RedirectHandler",
    "TokenStorage",
    "Tokens",
]

GRANT_JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
GRANT_TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
TOKEN_TYPE_ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
TOKEN_TYPE_ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
OFFLINE_ACCESS = "offline_access"
_EXPIRY_MARGIN = 30.0  # seconds before expiry at which a token is refreshed
_Doc = TypeVar("_Doc", ProtectedResourceMetadata, AuthorizationServerMetadata)


class AuthorizationError(Exception):
    """Authorization could not, or must not, go on (the message says why).

    ``error`` is the OAuth error code when a server refused with one.
    """

    def __init__(self, message: str, *, error: str | None = None) -> None:
        super().__init__(message)
        self.error = error


# ------------------------------------------------------------------ storage


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
        if tokens is None:
            self.tokens.pop(server, None)
        else:
            self.tokens[server] = tokens

    async def load_client(self, issuer: str) -> ClientInformation | None:
        return self.clients.get(issuer)

    async def save_client(self, issuer: str, client: ClientInformation | None) -> None:
        if client is None:
            self.clients.pop(issuer, None)
        else:
            self.clients[issuer] = client


# ---------------------------------------------------------------- discovery


class Discovery(msgspec.Struct, kw_only=True):
    """What discovery found for one MCP server."""

    server_url: str
    resource: str  # sent as RFC 8707 ``resource``, verbatim from the metadata
    issuer: str
    metadata: AuthorizationServerMetadata
    resource_metadata: ProtectedResourceMetadata | None = None
    fallback_endpoints: bool = False  # 2025-03-26 defaults, no metadata at all


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _error_text(reply: HttpReply) -> str:
    try:
        error = decode(reply.body, OAuthErrorResponse)
    except MetadataError:
        text = " ".join(reply.body.decode("utf-8", "replace").split())[:200]
        return f"HTTP {reply.status}" + (f": {text}" if text else "")
    return error.error + (f" ({error.error_description})" if error.error_description else "")


def _oauth_error(reply: HttpReply) -> str | None:
    try:
        return decode(reply.body, OAuthErrorResponse).error
    except MetadataError:
        return None


async def _get_document(http: OAuthHttp, url: str) -> HttpReply | None:
    """A metadata document's reply, or ``None`` when it is not there (any
    non-200 answer, or the host cannot be reached)."""
    try:
        reply = await http.get(url)
    except (Failure, ValueError):
        return None
    return reply if reply.status == 200 else None


async def _first_document(
    http: OAuthHttp, urls: list[str], kind: type[_Doc], what: str
) -> tuple[str, _Doc] | None:
    """The first of ``urls`` that holds a valid document.  A 200 that is not
    one (some servers answer every path with a web page) is passed over, but
    reported if no URL has a good document."""
    problem: str | None = None
    for url in urls:
        reply = await _get_document(http, url)
        if reply is None:
            continue
        try:
            return url, decode(reply.body, kind)
        except MetadataError as exc:
            problem = problem or f"bad {what} at {url}: {exc}"
    if problem is not None:
        raise AuthorizationError(problem)
    return None


async def discover_resource(
    http: OAuthHttp, server_url: str, metadata_url: str | None
) -> ProtectedResourceMetadata | None:
    """RFC 9728 metadata of the MCP server at ``server_url``, or ``None``.

    Metadata for another resource is refused: a server must not be able to
    send a client's authorization to someone else's authorization server.
    """
    urls = protected_resource_metadata_urls(server_url)
    if metadata_url:
        urls = [metadata_url, *(u for u in urls if u != metadata_url)]
    found = await _first_document(
        http, urls, ProtectedResourceMetadata, "protected resource metadata"
    )
    if found is None:
        return None
    url, prm = found
    if not resource_matches(prm.resource, server_url):
        raise AuthorizationError(
            f"the protected resource metadata at {url} is for {prm.resource!r}, "
            f"not for {server_url!r}; refusing to use it"
        )
    return prm


async def discover_authorization_server(
    http: OAuthHttp, issuer: str, *, same_origin: bool = False
) -> AuthorizationServerMetadata | None:
    """RFC 8414 / OpenID Connect metadata of ``issuer``, or ``None``.

    A document whose ``issuer`` is not exactly ``issuer`` is refused (RFC 8414
    section 3.3): its endpoints could belong to anyone.  With
    ``same_origin`` (2025-03-26 servers, whose metadata sits at their own
    root and may name an issuer with a path), an issuer on the same origin
    is accepted.
    """
    urls = authorization_server_metadata_urls(issuer)
    found = await _first_document(
        http, urls, AuthorizationServerMetadata, "authorization server metadata"
    )
    if found is None:
        return None
    url, metadata = found
    if metadata.issuer != issuer and not (same_origin and _origin(metadata.issuer) == issuer):
        raise AuthorizationError(
            f"the authorization server metadata at {url} names the issuer "
            f"{metadata.issuer!r}, not {issuer!r}; refusing to use it"
        )
    return metadata


async def discover(http: OAuthHttp, server_url: str, metadata_url: str | None) -> Discovery:
    """Everything needed to authorize for ``server_url`` (see the module docs)."""
    prm = await discover_resource(http, server_url, metadata_url)
    if prm is not None:
        if not prm.authorization_servers:
            raise AuthorizationError(f"the resource {prm.resource!r} names no authorization server")
        issuer = prm.authorization_servers[0]
        metadata = await discover_authorization_server(http, issuer)
        if metadata is None:
            raise AuthorizationError(f"the authorization server {issuer!r} publishes no metadata")
        return Discovery(
            server_url=server_url,
            resource=prm.resource,
            issuer=issuer,
            metadata=metadata,
            resource_metadata=prm,
        )
    # 2025-03-26: the MCP server's origin is the authorization server.
    issuer = _origin(server_url)
    resource = canonical_resource(server_url)
    metadata = await discover_authorization_server(http, issuer, same_origin=True)
    if metadata is not None:
        return Discovery(
            server_url=server_url, resource=resource, issuer=metadata.issuer, metadata=metadata
        )
    defaults = AuthorizationServerMetadata(
        issuer=issuer,
        authorization_endpoint=f"{issuer}/authorize",
        token_endpoint=f"{issuer}/token",
        registration_endpoint=f"{issuer}/register",
    )
    return Discovery(
        server_url=server_url,
        resource=resource,
        issuer=issuer,
        metadata=defaults,
        fallback_endpoints=True,
    )


# ------------------------------------------------------------------- grants


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
            raise AuthorizationError(
                "the authorization server has no authorization or token endpoint"
            )
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


class ClientCredentialsGrant:
    """``client_credentials``: the client acts for itself (needs a pre-registered client)."""

    grant_types = ["client_credentials"]

    def redirect_uris(self) -> list[str] | None:
        return None

    async def obtain(self, flow: Flow) -> TokenResponse:
        form = {"grant_type": "client_credentials", "resource": flow.discovery.resource}
        if flow.scope:
            form["scope"] = flow.scope
        return await flow.token_request(form, await flow.client())


class JwtBearerGrant:
    """RFC 7523 JWT bearer grant with an assertion you supply (e.g. a workload
    identity token).  A refusal is reported, never retried with another grant."""

    grant_types = [GRANT_JWT_BEARER]

    def __init__(self, assertion: str | Callable[[], Awaitable[str]]) -> None:
        self._assertion = assertion

    def redirect_uris(self) -> list[str] | None:
        return None

    async def obtain(self, flow: Flow) -> TokenResponse:
        assertion = self._assertion if isinstance(self._assertion, str) else await self._assertion()
        form = {
            "grant_type": GRANT_JWT_BEARER,
            "assertion": assertion,
            "resource": flow.discovery.resource,
        }
        if flow.scope:
            form["scope"] = flow.scope
        return await flow.token_request(form, await flow.client())


class EnterpriseGrant:
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

    def redirect_uris(self) -> list[str] | None:
        return None

    async def obtain(self, flow: Flow) -> TokenResponse:
        id_token = self._id_token if isinstance(self._id_token, str) else await self._id_token()
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
        form = {
            "grant_type": GRANT_JWT_BEARER,
            "assertion": grant.access_token,
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


# ------------------------------------------------------------------- client


def _scopes(text: str | None) -> list[str]:
    return [s for s in (text or "").split(" ") if s]


def _join(scopes: list[str]) -> str | None:
    return " ".join(dict.fromkeys(scopes)) or None


class OAuthClient:
    """OAuth 2.1 authorization for one MCP server (the ``auth=`` of the HTTP client).

    Args:
        grant: How tokens are obtained (default: :class:`AuthorizationCodeGrant`
            with a :class:`LoopbackRedirect` that opens the system browser).
        client_metadata: Sent for dynamic registration (``redirect_uris``,
            ``grant_types`` and ``application_type`` are filled in if unset).
        client_metadata_url: A Client ID Metadata Document URL, used as the
            client id where the authorization server supports them.
        client: A pre-registered client (id, secret, auth method).
        client_issuer: The issuer ``client`` is registered with; it is used
            with no other (default: any).
        private_key: PEM key for ``private_key_jwt`` client authentication.
        signing_algorithm: Its JWS algorithm.
        scope: Ask for exactly these scopes instead of choosing them.
        offline_access: Ask for ``offline_access`` (refresh tokens) when the
            authorization server lists it.
        dpop: ``True``: always, ``False``: never, ``None``: when the
            authorization server advertises ES256 for DPoP.
        storage: Where tokens and registrations are kept.
        max_step_ups: Re-authorizations for a 403 ``insufficient_scope`` in a
            row before giving up.
        timeout: Seconds allowed for each request to an authorization server.
    """

    def __init__(
        self,
        *,
        grant: Grant | None = None,
        client_metadata: ClientMetadata | None = None,
        client_metadata_url: str | None = None,
        client: ClientInformation | None = None,
        client_issuer: str | None = None,
        private_key: str | bytes | None = None,
        signing_algorithm: str = "ES256",
        scope: str | None = None,
        offline_access: bool = True,
        dpop: bool | None = None,
        storage: TokenStorage | None = None,
        max_step_ups: int = 2,
        timeout: float = 30.0,
        http: OAuthHttp | None = None,
    ) -> None:
        self.grant: Grant = grant or AuthorizationCodeGrant()
        self.client_metadata = client_metadata or ClientMetadata(client_name="mcp-trio")
        self.client_metadata_url = client_metadata_url
        self.preregistered = client
        self.client_issuer = client_issuer
        self._private_key = load_private_key(private_key) if private_key is not None else None
        self.signing_algorithm = signing_algorithm
        self.scope = scope
        self.offline_access = offline_access
        self.dpop = dpop
        self.storage: TokenStorage = storage or InMemoryTokenStorage()
        self.max_step_ups = max_step_ups
        self.http = http or OAuthHttp(timeout=timeout)
        self._lock = trio.Lock()
        self._server_url: str | None = None
        self._tokens: Tokens | None = None
        self._loaded = False
        self._discovery: Discovery | None = None
        self._requested: list[str] = []
        self._step_ups = 0
        self._fresh = False  # the tokens were issued in this process (not loaded)
        self._uses = 0  # requests the current access token went out with
        self._dpop: DPoPKey | None = None
        self._as_nonce: str | None = None
        self._rs_nonce: str | None = None

    # ------------------------------------------------ the transport's side

    async def headers(self, method: str, url: str) -> list[tuple[str, str]]:
        """Credentials for one request to the MCP server (none before the first 401)."""
        if self._server_url is None:
            self._server_url = url
        if not self._loaded:
            self._loaded = True
            self._tokens = await self.storage.load_tokens(self._key)
        tokens = self._tokens
        if tokens is not None and tokens.expired(time.time()) and tokens.refresh_token:
            async with self._lock:
                if self._tokens is tokens:
                    await self._refresh_or_forget(None)
            tokens = self._tokens
        if tokens is None:
            return []
        self._uses += 1
        return self._present(tokens, method, url)

    async def challenge(
        self, status: int, headers: Mapping[str, str], sent: list[tuple[str, str]]
    ) -> bool:
        """A 401/403 came back for a request that carried ``sent``: fix what can be fixed."""
        params = self._challenge_params(headers.get("www-authenticate", ""))
        async with self._lock:
            if self._authorization_of(sent) != self._current_authorization():
                return True  # another request has re-authorized meanwhile
            if status == 401:
                nonce = headers.get("dpop-nonce")
                if params.get("error") == "use_dpop_nonce" and nonce and self._tokens is not None:
                    if nonce == self._rs_nonce:
                        return False
                    self._rs_nonce = nonce
                    return True
                self._step_ups = 0
                await self._authorize(params, step_up=False)
                return True
            if status == 403 and params.get("error") == "insufficient_scope":
                wanted = _scopes(params.get("scope"))
                if not wanted or set(wanted) <= set(self._requested):
                    return False  # asking again for what was refused cannot help
                if self._step_ups >= self.max_step_ups:
                    return False
                self._step_ups += 1
                await self._authorize(params, step_up=True)
                return True
            return False

    # ------------------------------------------------------- presentation

    @property
    def _key(self) -> str:
        assert self._server_url is not None
        return canonical_resource(self._server_url)

    def _present(self, tokens: Tokens, method: str, url: str) -> list[tuple[str, str]]:
        if tokens.token_type.lower() == "dpop" and self._dpop is not None:
            proof = self._dpop.proof(
                method, url, nonce=self._rs_nonce, access_token=tokens.access_token
            )
            return [("Authorization", f"DPoP {tokens.access_token}"), ("DPoP", proof)]
        return [("Authorization", f"Bearer {tokens.access_token}")]

    @staticmethod
    def _authorization_of(sent: list[tuple[str, str]]) -> str | None:
        for name, value in sent:
            if name.lower() == "authorization":
                return value.partition(" ")[2]
        return None

    def _current_authorization(self) -> str | None:
        return self._tokens.access_token if self._tokens is not None else None

    @staticmethod
    def _challenge_params(header: str) -> dict[str, str]:
        """The parameters of the Bearer (or DPoP) challenge, merged."""
        params: dict[str, str] = {}
        for challenge in parse_www_authenticate(header):
            if challenge.scheme in ("bearer", "dpop"):
                for name, value in challenge.params.items():
                    params.setdefault(name, value)
        return params

    # ---------------------------------------------------------- authorize

    async def _authorize(self, params: Mapping[str, str], *, step_up: bool) -> None:
        """Discover (again: the authorization server may have moved), then
        refresh if that can work, else run the grant."""
        assert self._server_url is not None
        try:
            discovery = await discover(self.http, self._server_url, params.get("resource_metadata"))
        except MetadataError as exc:
            raise AuthorizationError(str(exc)) from None
        self._discovery = discovery
        scope = self._choose_scope(discovery, params.get("scope"), step_up)
        tokens = self._tokens
        if (
            not step_up
            and tokens is not None
            and self._fresh
            and self._uses <= 1
            and tokens.issuer == discovery.issuer
        ):
            raise AuthorizationError(
                "the server refused an access token just issued for it by "
                f"{discovery.issuer!r}; authorizing again would not help"
            )
        if (
            not step_up
            and tokens is not None
            and tokens.refresh_token
            and tokens.issuer == discovery.issuer
            and await self._refresh_or_forget(discovery)
        ):
            return
        self._tokens = None
        self._requested = _scopes(scope)
        token = await self._obtain(discovery, scope)
        await self._keep(token, discovery, refresh_token=None)

    async def _obtain(self, discovery: Discovery, scope: str | None) -> TokenResponse:
        """Run the grant; a stored registration the server no longer knows
        (``invalid_client``: it forgot its clients) is dropped and made anew, once."""
        try:
            return await self.grant.obtain(Flow(self, discovery, scope))
        except AuthorizationError as exc:
            stored = await self.storage.load_client(discovery.issuer)
            if exc.error != "invalid_client" or stored is None or not self._registered(stored):
                raise
        await self.storage.save_client(discovery.issuer, None)
        return await self.grant.obtain(Flow(self, discovery, scope))

    def _registered(self, client: ClientInformation) -> bool:
        """Whether ``client`` came from dynamic registration (not given, not a URL id)."""
        given = self.preregistered is not None and client.client_id == self.preregistered.client_id
        return not given and client.client_id != self.client_metadata_url

    def _choose_scope(
        self, discovery: Discovery, challenged: str | None, step_up: bool
    ) -> str | None:
        if self.scope is not None:
            return self.scope
        prm = discovery.resource_metadata
        scopes = _scopes(challenged) or (list(prm.scopes_supported or []) if prm else [])
        if step_up:
            scopes = self._requested + scopes
        supported = discovery.metadata.scopes_supported or []
        if (
            scopes
            and self.offline_access
            and OFFLINE_ACCESS in supported
            and "refresh_token" in self.grant.grant_types
        ):
            scopes.append(OFFLINE_ACCESS)
        return _join(scopes)

    async def _refresh_or_forget(self, discovery: Discovery | None) -> bool:
        """Use the refresh token; on any failure drop the tokens (a new grant follows)."""
        tokens = self._tokens
        assert tokens is not None and tokens.refresh_token
        try:
            if discovery is None:
                assert self._server_url is not None
                discovery = self._discovery or await discover(self.http, self._server_url, None)
            form = {
                "grant_type": "refresh_token",
                "refresh_token": tokens.refresh_token,
                "resource": discovery.resource,
            }
            flow = Flow(self, discovery, None)
            token = await flow.token_request(form, await flow.client())
        except AuthorizationError:
            self._tokens = None
            await self.storage.save_tokens(self._key, None)
            return False
        await self._keep(token, discovery, refresh_token=tokens.refresh_token)
        return True

    async def _keep(
        self, token: TokenResponse, discovery: Discovery, refresh_token: str | None
    ) -> None:
        expires_at = time.time() + float(token.expires_in) if token.expires_in else None
        self._tokens = Tokens(
            access_token=token.access_token,
            token_type=token.token_type,
            refresh_token=token.refresh_token or refresh_token,
            scope=token.scope,
            expires_at=expires_at,
            issuer=discovery.issuer,
        )
        self._fresh = True
        self._uses = 0
        await self.storage.save_tokens(self._key, self._tokens)

    # ------------------------------------------------------ client identity

    async def _client_for(self, discovery: Discovery) -> ClientInformation:
        """This client's identity at ``discovery.issuer``: stored, pre-registered,
        a metadata document URL, or a new registration, in that order."""
        issuer = discovery.issuer
        stored = await self.storage.load_client(issuer)
        if stored is not None:
            return stored
        client = self._preregistered_for(issuer)
        if (
            client is None
            and self.client_metadata_url
            and discovery.metadata.client_id_metadata_document_supported
        ):
            method = "private_key_jwt" if self._private_key is not None else "none"
            client = ClientInformation(
                client_id=self.client_metadata_url, token_endpoint_auth_method=method
            )
        if client is None:
            client = await self._register(discovery)
        await self.storage.save_client(issuer, client)
        return client

    def _preregistered_for(self, issuer: str) -> ClientInformation | None:
        if self.preregistered is None:
            return None
        if self.client_issuer is not None and self.client_issuer.rstrip("/") != issuer.rstrip("/"):
            return None
        return self.preregistered

    async def _register(self, discovery: Discovery) -> ClientInformation:
        endpoint = discovery.metadata.registration_endpoint
        if not endpoint:
            raise AuthorizationError(
                f"the authorization server {discovery.issuer!r} offers no dynamic registration; "
                "give a pre-registered client (client=...)"
            )
        request = msgspec.structs.replace(
            self.client_metadata,
            redirect_uris=self.client_metadata.redirect_uris or self.grant.redirect_uris(),
            grant_types=self.client_metadata.grant_types or list(self.grant.grant_types),
            response_types=self.client_metadata.response_types
            or (["code"] if "authorization_code" in self.grant.grant_types else None),
            token_endpoint_auth_method=self.client_metadata.token_endpoint_auth_method
            or self._preferred_auth_method(discovery.metadata),
            application_type=self.client_metadata.application_type or "native",
        )
        try:
            reply = await self.http.request(
                "POST", endpoint, json_body=msgspec.to_builtins(request)
            )
        except (Failure, ValueError) as exc:
            raise AuthorizationError(f"client registration at {endpoint} failed: {exc}") from None
        if not reply.ok:
            raise AuthorizationError(f"client registration refused: {_error_text(reply)}")
        try:
            return decode(reply.body, ClientInformation)
        except MetadataError as exc:
            raise AuthorizationError(f"bad client registration response: {exc}") from None

    def _preferred_auth_method(self, metadata: AuthorizationServerMetadata) -> str:
        supported = metadata.token_endpoint_auth_methods_supported or ["client_secret_basic"]
        if self._private_key is not None and "private_key_jwt" in supported:
            return "private_key_jwt"
        for method in ("client_secret_basic", "client_secret_post", "none"):
            if method in supported:
                return method
        return supported[0]

    # --------------------------------------------- token request plumbing

    def _auth_method(self, discovery: Discovery, client: ClientInformation) -> str:
        """RFC 8414 ``token_endpoint_auth_methods_supported`` (default
        ``client_secret_basic``) decides, within what the client can do."""
        supported = discovery.metadata.token_endpoint_auth_methods_supported
        registered = client.token_endpoint_auth_method
        if registered and (supported is None or registered in supported):
            return registered
        candidates = []
        if self._private_key is not None:
            candidates.append("private_key_jwt")
        if client.client_secret:
            candidates += ["client_secret_basic", "client_secret_post"]
        candidates.append("none")
        for method in candidates:
            if method in (supported or ["client_secret_basic", "none"]):
                return method
        return candidates[0]

    def _authenticate(
        self, discovery: Discovery, client: ClientInformation, form: Mapping[str, str]
    ) -> tuple[dict[str, str], dict[str, str]]:
        """The form and headers of a token request, with client authentication."""
        body = dict(form)
        headers: dict[str, str] = {}
        client_id = client.client_id or ""
        method = self._auth_method(discovery, client)
        if method == "client_secret_basic" and client.client_secret:
            # RFC 6749 section 2.3.1: both halves form-encoded before base64
            user = urllib.parse.quote(client_id, safe="")
            password = urllib.parse.quote(client.client_secret, safe="")
            headers["Authorization"] = (
                "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
            )
        elif method == "client_secret_post" and client.client_secret:
            body["client_id"] = client_id
            body["client_secret"] = client.client_secret
        elif method == "private_key_jwt" and self._private_key is not None:
            body["client_id"] = client_id
            body["client_assertion_type"] = JWT_BEARER_ASSERTION
            body["client_assertion"] = client_assertion(
                client_id, discovery.issuer, self._private_key, self.signing_algorithm
            )
        else:
            body["client_id"] = client_id
        return body, headers

    def _dpop_key(self, discovery: Discovery) -> DPoPKey | None:
        """The DPoP key, made on first use, when DPoP is on for this server."""
        use = self.dpop
        if use is None:
            algs = discovery.metadata.dpop_signing_alg_values_supported or []
            use = DPoPKey.algorithm in algs
        if not use:
            return None
        if self._dpop is None:
            self._dpop = DPoPKey()
        return self._dpop
