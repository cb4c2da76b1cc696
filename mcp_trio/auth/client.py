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
import time
import urllib.parse
from collections.abc import Mapping

import msgspec
import trio

from ..transports.http.client._http11 import Failure
from ._client_discovery import AuthorizationError, Discovery, _error_text, discover
from ._client_discovery import discover_authorization_server as discover_authorization_server
from ._client_discovery import discover_resource as discover_resource
from ._client_grants import GRANT_JWT_BEARER as GRANT_JWT_BEARER
from ._client_grants import GRANT_TOKEN_EXCHANGE as GRANT_TOKEN_EXCHANGE
from ._client_grants import TOKEN_TYPE_ID_JAG as TOKEN_TYPE_ID_JAG
from ._client_grants import TOKEN_TYPE_ID_TOKEN as TOKEN_TYPE_ID_TOKEN
from ._client_grants import (
    AuthorizationCodeGrant,
    ClientCredentialsGrant,
    EnterpriseGrant,
    Flow,
    Grant,
    JwtBearerGrant,
)
from ._client_http import OAuthHttp, UrlGuard
from ._client_jose import JWT_BEARER_ASSERTION, DPoPKey, client_assertion, load_private_key
from ._client_redirect import HeadlessRedirect, LoopbackRedirect, RedirectHandler
from ._client_storage import InMemoryTokenStorage, Tokens, TokenStorage
from ._metadata import (
    AuthorizationServerMetadata,
    ClientInformation,
    ClientMetadata,
    MetadataError,
    TokenResponse,
    canonical_resource,
    decode,
    parse_www_authenticate,
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

OFFLINE_ACCESS = "offline_access"


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
        allow_insecure_loopback: Let discovery and the OAuth requests use
            ``http`` and loopback addresses (``127.0.0.0/8``, ``::1``,
            ``localhost``), for development and tests.  Off, every URL the
            client fetches must be ``https`` to a host that is not a
            private, link-local or loopback IP literal (see
            :class:`~mcp_trio.auth._client_http.UrlGuard`).
        http: The HTTP requester (its settings are kept; the client adds
            its URL rules).
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
        allow_insecure_loopback: bool = False,
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
        guard = UrlGuard(allow_insecure_loopback=allow_insecure_loopback)
        self.http = (http or OAuthHttp(timeout=timeout)).guarded(guard)
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

    async def challenge(self, status: int, headers: Mapping[str, str], sent: list[tuple[str, str]]) -> bool:
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
            proof = self._dpop.proof(method, url, nonce=self._rs_nonce, access_token=tokens.access_token)
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

    def _choose_scope(self, discovery: Discovery, challenged: str | None, step_up: bool) -> str | None:
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

    async def _keep(self, token: TokenResponse, discovery: Discovery, refresh_token: str | None) -> None:
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
            client = ClientInformation(client_id=self.client_metadata_url, token_endpoint_auth_method=method)
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
            reply = await self.http.request("POST", endpoint, json_body=msgspec.to_builtins(request))
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
            headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
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
