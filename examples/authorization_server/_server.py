"""An example OAuth 2.1 authorization server for MCP, for tests, demos and the
conformance harness.

It keeps all its state (clients, codes, grants, keys) in memory: a restart
forgets everything.  It is not meant to guard anything real.

What it does:

* RFC 8414 metadata at ``/.well-known/oauth-authorization-server`` and the
  same document with the OpenID Connect fields at
  ``/.well-known/openid-configuration``;
* ``GET /authorize``: the authorization code grant with PKCE (S256 only,
  required).  Headless: with ``auto_approve`` (the default) it answers a valid
  request at once with a 302 to the ``redirect_uri`` carrying ``code``,
  ``state`` and ``iss`` (RFC 9207), approving as the user ``subject``;
  otherwise it redirects with ``error=access_denied``.  A loopback
  ``redirect_uri`` (``http://127.0.0.1``, ``http://[::1]``, ``http://localhost``)
  matches a registered one on any port (RFC 8252 7.3);
* ``POST /register``: dynamic client registration (RFC 7591); a ``client_id``
  that is an ``https`` URL is a Client ID Metadata Document, fetched and used
  as the client's registration (cached five minutes);
* ``POST /token``: ``authorization_code``, ``refresh_token`` (rotated at every
  use; using a rotated one revokes the whole grant) and ``client_credentials``,
  with client authentication ``client_secret_basic``, ``client_secret_post``,
  ``none`` (public clients) and ``private_key_jwt`` (RFC 7523, keys from the
  client's registered ``jwks``);
* RFC 8707 ``resource`` indicators: what the authorization request names
  becomes the access token's audience (``aud``);
* access tokens are JWTs (RFC 9068, ``typ: at+jwt``) signed with the server's
  own key (RS256 or ES256), published at ``GET /jwks``; :meth:`rotate_key`
  replaces the key;
* ``POST /introspect`` (RFC 7662) and ``POST /revoke`` (RFC 7009), for any
  authenticated client;
* every bad request gets the RFC 6749 5.2 error (``invalid_request``,
  ``invalid_client``, ``invalid_grant``, ``unauthorized_client``,
  ``unsupported_grant_type``, ``invalid_scope``, RFC 8707 ``invalid_target``,
  RFC 7591 ``invalid_redirect_uri`` / ``invalid_client_metadata``).

Use from Python (the server runs in a trio nursery; the issuer is its URL)::

    from examples.authorization_server import AuthorizationServer

    auth_server = AuthorizationServer(scopes_supported=["mcp:read", "mcp:write"])
    client = auth_server.register_client(redirect_uris=["http://127.0.0.1/callback"])
    url = await nursery.start(auth_server.serve, "127.0.0.1", 0)   # "http://127.0.0.1:PORT"
    token = auth_server.issue_access_token(subject="ada", scopes=["mcp:read"],
                                           resource="http://127.0.0.1:3001/mcp")

``serve_h11`` / ``ASGIApp`` users can mount :meth:`AuthorizationServer.routes`
themselves (set ``issuer`` first).

From the command line (prints ``authorization server at URL`` on stderr)::

    python -m examples.authorization_server --port 9000 \\
        --client my-client --redirect-uri http://127.0.0.1/callback

Signing and ``private_key_jwt`` need PyJWT with cryptography (the ``auth`` extra).

This module holds :class:`AuthorizationServer` itself: its public methods, its
metadata documents and the serving of its endpoints.  Their work is done by
collaborators, each owning its state: ``_policy`` (the issuer, the scopes and
resources granted, the client authentication methods accepted), ``_clients``
(registration, Client ID Metadata Documents), ``_client_auth`` (client
authentication, the assertions seen), ``_authorize`` (the authorization
endpoint and its codes), ``_keys`` (the signing keys) and ``_tokens`` (the
token endpoint, the grants and access tokens, introspection, revocation);
``_common`` holds the records, the errors and the forgetting of what expired;
``_cli`` is the command line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

import msgspec
import trio

from mcp_trio.auth import _metadata as md
from mcp_trio.auth._server_http import NO_STORE, send, send_json
from mcp_trio.transports.http.server import (
    ASGIApp,
    HttpRequest,
    Responder,
    serve_h11,
    serve_hypercorn,
)

from ._authorize import _Authorizer
from ._client_auth import _ClientAuthenticator
from ._clients import _ClientRegistry
from ._common import AUTH_METHODS, GRANT_TYPES, OAuthError, _Forgetting, _Grant, _Moved, _SigningKey
from ._keys import _KeyRing
from ._policy import _Policy
from ._tokens import _Tokens

__all__ = ["AuthorizationServer"]

_MAX_BODY = 64 * 1024


class AuthorizationServer:
    """An in-memory OAuth 2.1 authorization server (see the module docstring).

    Args:
        issuer: Its issuer URL (no trailing slash); ``None``: the URL
            :meth:`serve` binds to.
        scopes_supported: The scopes it knows; ``None`` accepts any
            syntactically valid scope.
        default_scopes: Granted when a request names none (after the
            client's registered ``scope``).
        resources: The resource indicators it issues tokens for; ``None``:
            any absolute URI.
        default_resource: The audience of tokens whose request named no
            resource; ``None``: the issuer itself.
        auto_approve: Approve every valid authorization request at once (as
            ``subject``); ``False`` denies them (``access_denied``).
        access_token_ttl, refresh_token_ttl, code_ttl: Lifetimes in seconds.
        algorithm: ``"RS256"`` or ``"ES256"`` for access tokens.
        allow_registration: Serve ``/register``.
        auth_methods: The client authentication methods it accepts (a
            subset of ``client_secret_basic``, ``client_secret_post``,
            ``none``, ``private_key_jwt``).
        max_clients: Registrations kept at most (older dynamic ones are
            dropped first).
        allow_http_client_documents: Also accept Client ID Metadata
            Document URLs on plain ``http`` loopback addresses (tests);
            otherwise only ``https`` ones.
    """

    max_body_size = _MAX_BODY

    # deprecated: the settings are their collaborators' now
    scopes_supported = _Moved[list[str] | None]("policy")
    default_scopes = _Moved[list[str]]("policy")
    resources = _Moved[list[str] | None]("policy")
    default_resource = _Moved[str | None]("policy")
    auth_methods = _Moved[list[str]]("policy")
    auto_approve = _Moved[bool]("authorizer")
    subject = _Moved[str]("authorizer")
    code_ttl = _Moved[int]("authorizer")
    access_token_ttl = _Moved[int]("tokens")
    refresh_token_ttl = _Moved[int]("tokens")
    algorithm = _Moved[str]("signing")
    max_clients = _Moved[int]("registry")
    allow_http_client_documents = _Moved[bool]("registry")

    def __init__(
        self,
        issuer: str | None = None,
        *,
        scopes_supported: Iterable[str] | None = None,
        default_scopes: Iterable[str] = (),
        resources: Iterable[str] | None = None,
        default_resource: str | None = None,
        auto_approve: bool = True,
        subject: str = "user",
        access_token_ttl: int = 3600,
        refresh_token_ttl: int = 30 * 24 * 3600,
        code_ttl: int = 60,
        algorithm: str = "RS256",
        allow_registration: bool = True,
        auth_methods: Iterable[str] = AUTH_METHODS,
        max_clients: int = 10_000,
        allow_http_client_documents: bool = False,
    ) -> None:
        self.policy = _Policy(
            issuer,
            scopes_supported=scopes_supported,
            default_scopes=default_scopes,
            resources=resources,
            default_resource=default_resource,
            auth_methods=auth_methods,
        )
        self.allow_registration = allow_registration
        forgetting = _Forgetting()
        self.registry = _ClientRegistry(
            self.policy, max_clients=max_clients, allow_http_client_documents=allow_http_client_documents
        )
        self.authorizer = _Authorizer(
            self.policy,
            self.registry,
            forgetting,
            auto_approve=auto_approve,
            subject=subject,
            code_ttl=code_ttl,
        )
        self.authenticator = _ClientAuthenticator(self.policy, self.registry, forgetting)
        self.signing = _KeyRing(algorithm)
        self.tokens = _Tokens(
            self.policy,
            self.authenticator,
            self.authorizer,
            self.signing,
            forgetting,
            access_token_ttl=access_token_ttl,
            refresh_token_ttl=refresh_token_ttl,
        )

    # ----------------------------------------------------------- public API

    @property
    def issuer(self) -> str | None:
        """Its issuer URL (no trailing slash); ``None`` until :meth:`serve` binds."""
        return self.policy.issuer

    @issuer.setter
    def issuer(self, issuer: str | None) -> None:
        self.policy.issuer = issuer

    @property
    def clients(self) -> dict[str, md.ClientInformation]:
        """The registered clients, by ``client_id``."""
        return self.registry.clients

    @property
    def _keys(self) -> list[_SigningKey]:
        """The signing keys, the one in use first."""
        return self.signing.keys

    @property
    def jwks(self) -> dict[str, Any]:
        """The public keys (JWK Set) that verify its access tokens."""
        return self.signing.jwks

    def rotate_key(self, *, keep_old: bool = False) -> str:
        """Sign with a new key from now on; the old one stays in the JWK Set
        only with ``keep_old``.  Returns the new key id."""
        return self.signing.rotate(keep_old=keep_old)

    def register_client(
        self,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        redirect_uris: Sequence[str] = (),
        token_endpoint_auth_method: str = "none",
        grant_types: Sequence[str] = ("authorization_code", "refresh_token"),
        scope: str | None = None,
        jwks: dict[str, Any] | None = None,
        client_name: str | None = None,
    ) -> md.ClientInformation:
        """Pre-register a client (kept until the server stops).  A secret is
        made up for the ``client_secret_*`` methods when none is given."""
        metadata = md.ClientMetadata(
            redirect_uris=list(redirect_uris) or None,
            token_endpoint_auth_method=token_endpoint_auth_method,
            grant_types=list(grant_types),
            response_types=["code"] if "authorization_code" in grant_types else [],
            scope=scope,
            jwks=jwks,
            client_name=client_name,
        )
        return self.registry.preregister(metadata, client_id, client_secret)

    def issue_access_token(
        self,
        *,
        subject: str = "user",
        client_id: str = "direct",
        scopes: Iterable[str] = (),
        resource: str | Sequence[str] | None = None,
        expires_in: int | None = None,
        claims: dict[str, Any] | None = None,
    ) -> str:
        """An access token made directly, without a grant (for tests and
        demos); ``expires_in`` may be negative for an expired token; ``claims``
        overrides any claim."""
        resources = [resource] if isinstance(resource, str) else list(resource or [])
        grant = _Grant(client_id=client_id, subject=subject, scopes=list(scopes), resources=resources)
        token, _ = self.tokens.access_token(grant, grant.scopes, resources, expires_in, claims)
        return token

    def routes(self) -> dict[str, AuthorizationServer]:
        """``path -> handler`` for a front door's ``routes`` (this object serves them all)."""
        return {path: self for path in self._endpoints()}

    async def serve(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        front_door: str = "h11",
        task_status: Any = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve on ``host:port`` until cancelled, with the project's h11 front
        door or hypercorn (``front_door="hypercorn"``); ``task_status.started``
        gets the issuer URL (which becomes the issuer when none was given)."""
        if front_door not in ("h11", "hypercorn"):
            raise ValueError("front_door must be 'h11' or 'hypercorn'")
        routes = self.routes()
        first_path = next(iter(routes))
        async with trio.open_nursery() as nursery:
            if front_door == "h11":
                serve = partial(serve_h11, self, host, port, path=first_path, routes=routes)
                urls = await nursery.start(serve)
            else:
                app = ASGIApp(self, first_path, routes)
                urls = await nursery.start(serve_hypercorn, app, host, port)
            if self.issuer is None:
                self.issuer = urls[0]
            task_status.started(self.issuer)

    # ------------------------------------------------------------ metadata

    def _endpoints(self) -> dict[str, Callable[[HttpRequest], Any]]:
        table: dict[str, Callable[[HttpRequest], Any]] = {
            md.OAUTH_AS_WELL_KNOWN: self._get_metadata,
            md.OIDC_WELL_KNOWN: self._get_openid_configuration,
            "/authorize": self.authorizer.authorize,
            "/token": self.tokens.token,
            "/jwks": self._get_jwks,
            "/introspect": self.tokens.introspect,
            "/revoke": self.tokens.revoke,
        }
        if self.allow_registration:
            table["/register"] = self.registry.registration
        return table

    def metadata(self) -> md.AuthorizationServerMetadata:
        """Its RFC 8414 metadata."""
        methods = list(self.policy.auth_methods)
        url = self.policy.url
        confidential = [m for m in methods if m != "none"]
        return md.AuthorizationServerMetadata(
            issuer=url(""),
            authorization_endpoint=url("/authorize"),
            token_endpoint=url("/token"),
            jwks_uri=url("/jwks"),
            registration_endpoint=url("/register") if self.allow_registration else None,
            scopes_supported=self.policy.scopes_supported,
            response_types_supported=["code"],
            response_modes_supported=["query"],
            grant_types_supported=list(GRANT_TYPES),
            token_endpoint_auth_methods_supported=methods,
            token_endpoint_auth_signing_alg_values_supported=["RS256", "ES256"],
            introspection_endpoint=url("/introspect"),
            introspection_endpoint_auth_methods_supported=confidential,
            revocation_endpoint=url("/revoke"),
            revocation_endpoint_auth_methods_supported=methods,
            code_challenge_methods_supported=["S256"],
            authorization_response_iss_parameter_supported=True,
            client_id_metadata_document_supported=True,
        )

    async def _get_metadata(self, request: HttpRequest) -> tuple[int, Any, list[tuple[str, str]]]:
        return 200, md.encode(self.metadata()), []

    async def _get_openid_configuration(self, request: HttpRequest) -> tuple[int, Any, list[tuple[str, str]]]:
        document = msgspec.structs.replace(
            self.metadata(),
            subject_types_supported=["public"],
            id_token_signing_alg_values_supported=[self.signing.algorithm],
        )
        return 200, md.encode(document), []

    async def _get_jwks(self, request: HttpRequest) -> tuple[int, Any, list[tuple[str, str]]]:
        return 200, self.jwks, []

    # ------------------------------------------------------------- serving

    async def handle(self, request: HttpRequest, responder: Responder) -> None:
        """Answer one request on any of its paths (front doors call this)."""
        path = request.path.rstrip("/") or "/"
        endpoint = self._endpoints().get(path)
        if endpoint is None:
            await send(responder, 404, b"Not Found", [("content-type", "text/plain")])
            return
        wanted = (
            "GET" if path in (md.OAUTH_AS_WELL_KNOWN, md.OIDC_WELL_KNOWN, "/jwks", "/authorize") else "POST"
        )
        if request.method != wanted:
            await send(responder, 405, b"", [("allow", wanted)])
            return
        try:
            status, document, headers = await endpoint(request)
        except OAuthError as exc:
            headers = [] if exc.status != 401 else self._basic_challenge(request)
            await send_json(responder, exc.status, exc.document(), [*headers, *NO_STORE])
            return
        if status in (301, 302, 303, 307):
            await send(responder, status, b"", headers)
            return
        await send_json(responder, status, document, headers)

    def _basic_challenge(self, request: HttpRequest) -> list[tuple[str, str]]:
        """RFC 6749 5.2: a failed Basic authentication is answered with a Basic challenge."""
        scheme = request.headers.get("authorization", "").partition(" ")[0].lower()
        return [("www-authenticate", 'Basic realm="oauth"')] if scheme == "basic" else []
