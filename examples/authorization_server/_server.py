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
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import msgspec
import trio

from mcp_trio.transports.http._http11 import Failure
from mcp_trio.transports.http.server import ASGIApp, HttpRequest, Responder, serve_h11, serve_hypercorn
from mcp_trio.auth import _metadata as md
from mcp_trio.auth._client_http import OAuthHttp
from mcp_trio.auth._jose import require_jwt
from mcp_trio.auth._server_http import NO_STORE, FormError, first, parse_form, send, send_json

__all__ = ["AuthorizationServer", "OAuthError", "main"]

CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
AUTH_METHODS = ("client_secret_basic", "client_secret_post", "none", "private_key_jwt")
GRANT_TYPES = ("authorization_code", "refresh_token", "client_credentials")
_LOOPBACK_HOSTS = ("127.0.0.1", "[::1]", "localhost")
_PKCE_VALUE = re.compile(r"^[A-Za-z0-9\-._~]{43,128}$")
_SCOPE_TOKEN = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]+$")  # RFC 6749 3.3 scope-token
_MAX_BODY = 64 * 1024


def _jose() -> Any:
    return require_jwt("the example authorization server (it signs JWTs)")


class OAuthError(Exception):
    """An OAuth error response (RFC 6749 5.2 and its extensions)."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(f"{error}: {description}")
        self.error = error
        self.description = description
        self.status = status

    def document(self) -> dict[str, str]:
        return {"error": self.error, "error_description": self.description}


def _required(form: dict[str, list[str]], name: str, why: str = "") -> str:
    """The value of the form field ``name``; ``invalid_request`` when it is absent."""
    value = first(form, name)
    if value is None:
        raise OAuthError("invalid_request", f"{name} is missing{why}")
    return value


# ------------------------------------------------------------------ keys


class _SigningKey:
    """One key pair the server signs access tokens with."""

    def __init__(self, algorithm: str) -> None:
        from cryptography.hazmat.primitives.asymmetric import ec, rsa

        jwt = _jose()
        self.algorithm = algorithm
        self.kid = secrets.token_urlsafe(12)
        if algorithm == "ES256":
            self.private_key: Any = ec.generate_private_key(ec.SECP256R1())
            jwk = jwt.algorithms.ECAlgorithm.to_jwk(self.private_key.public_key(), as_dict=True)
        elif algorithm == "RS256":
            self.private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            jwk = jwt.algorithms.RSAAlgorithm.to_jwk(self.private_key.public_key(), as_dict=True)
        else:
            raise ValueError("algorithm must be 'RS256' or 'ES256'")
        self.public_jwk: dict[str, Any] = {**jwk, "kid": self.kid, "use": "sig", "alg": algorithm}

    def sign(self, claims: dict[str, Any]) -> str:
        headers = {"kid": self.kid, "typ": "at+jwt"}
        return str(
            _jose().encode(claims, self.private_key, algorithm=self.algorithm, headers=headers)
        )


# ------------------------------------------------------------------ state


@dataclass
class _Code:
    client_id: str
    redirect_uri: str
    challenge: str
    scopes: list[str]
    resources: list[str]
    subject: str
    expires_at: float
    redirect_given: bool
    used: bool = False
    grant: _Grant | None = None  # the grant its redemption started (revoked on reuse)


@dataclass
class _Grant:
    """What a user (or a client for itself) authorized; refresh tokens and the
    access tokens issued from it hang off it, so revoking it ends them all."""

    client_id: str
    subject: str
    scopes: list[str]
    resources: list[str]
    refresh_token: str | None = None
    refresh_expires_at: float = 0.0
    revoked: bool = False
    retired: set[str] = field(default_factory=set)  # rotated refresh tokens


def _b64url_sha256(value: str) -> str:
    digest = hashlib.sha256(value.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _is_loopback(parts: urllib.parse.SplitResult) -> bool:
    host = parts.netloc.rsplit(":", 1)[0] if not parts.netloc.endswith("]") else parts.netloc
    return parts.scheme == "http" and host.lower() in _LOOPBACK_HOSTS


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


def _check_redirect_uri(uri: str) -> str | None:
    """Why ``uri`` cannot be a redirection endpoint, or ``None``."""
    try:
        parts = urllib.parse.urlsplit(uri)
    except ValueError:
        return f"{uri!r} is not a URI"
    if not parts.scheme or parts.fragment or "#" in uri:
        return f"{uri!r} must be an absolute URI without a fragment"
    if parts.scheme in ("javascript", "data", "file", "vbscript"):
        return f"{uri!r} uses a forbidden scheme"
    if parts.scheme == "http" and not _is_loopback(parts):
        return f"{uri!r}: plain http is allowed only for loopback addresses"
    if parts.scheme in ("http", "https") and not parts.netloc:
        return f"{uri!r} has no host"
    return None


def _check_resource(uri: str) -> str | None:
    """Why ``uri`` is not an RFC 8707 resource indicator, or ``None``."""
    try:
        parts = urllib.parse.urlsplit(uri)
    except ValueError:
        return f"{uri!r} is not a URI"
    if not parts.scheme or "#" in uri:
        return f"{uri!r} must be an absolute URI without a fragment"
    return None


def _with_query(uri: str, params: Sequence[tuple[str, str | None]]) -> str:
    """``uri`` with ``params`` appended to its query (RFC 6749 4.1.2)."""
    extra = urllib.parse.urlencode([(k, v) for k, v in params if v is not None])
    parts = urllib.parse.urlsplit(uri)
    query = f"{parts.query}&{extra}" if parts.query else extra
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


# ------------------------------------------------------------------ server


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
        self.allow_http_client_documents = allow_http_client_documents
        self._documents: dict[str, tuple[float, md.ClientInformation]] = {}
        self._http = OAuthHttp(timeout=10.0, max_size=64 * 1024)
        self.auth_methods = list(auth_methods)
        unknown = [m for m in self.auth_methods if m not in AUTH_METHODS]
        if unknown or not self.auth_methods:
            raise ValueError(f"auth_methods must be some of {', '.join(AUTH_METHODS)}")
        self.issuer = issuer.rstrip("/") if issuer else None
        self.scopes_supported = list(scopes_supported) if scopes_supported is not None else None
        self.default_scopes = list(default_scopes)
        self.resources = list(resources) if resources is not None else None
        self.default_resource = default_resource
        self.auto_approve = auto_approve
        self.subject = subject
        self.access_token_ttl = access_token_ttl
        self.refresh_token_ttl = refresh_token_ttl
        self.code_ttl = code_ttl
        self.algorithm = algorithm
        self.allow_registration = allow_registration
        self.max_clients = max_clients
        self.clients: dict[str, md.ClientInformation] = {}
        self._preregistered: set[str] = set()
        self._codes: dict[str, _Code] = {}
        self._grants_by_refresh: dict[str, _Grant] = {}
        self._grants_by_token: dict[str, _Grant] = {}
        self._token_expiry: dict[str, float] = {}
        self._expired_at = -1.0
        self._seen_assertions: dict[str, float] = {}
        self._keys = [_SigningKey(algorithm)]

    # ----------------------------------------------------------- public API

    @property
    def jwks(self) -> dict[str, Any]:
        """The public keys (JWK Set) that verify its access tokens."""
        return {"keys": [key.public_jwk for key in self._keys]}

    def rotate_key(self, *, keep_old: bool = False) -> str:
        """Sign with a new key from now on; the old one stays in the JWK Set
        only with ``keep_old``.  Returns the new key id."""
        key = _SigningKey(self.algorithm)
        self._keys = [key, *self._keys[:1]] if keep_old else [key]
        return key.kid

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
        info = self._register(metadata, client_id=client_id, client_secret=client_secret)
        self._preregistered.add(str(info.client_id))
        return info

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
        grant = _Grant(
            client_id=client_id, subject=subject, scopes=list(scopes), resources=resources
        )
        token, _ = self._access_token(grant, grant.scopes, resources, expires_in, claims)
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
            "/authorize": self._authorize,
            "/token": self._token,
            "/jwks": self._get_jwks,
            "/introspect": self._introspect,
            "/revoke": self._revoke,
        }
        if self.allow_registration:
            table["/register"] = self._registration
        return table

    def _url(self, path: str) -> str:
        if self.issuer is None:
            raise RuntimeError("the authorization server has no issuer yet (serve() sets it)")
        return self.issuer + path

    def metadata(self) -> md.AuthorizationServerMetadata:
        """Its RFC 8414 metadata."""
        methods = list(self.auth_methods)
        confidential = [m for m in methods if m != "none"]
        return md.AuthorizationServerMetadata(
            issuer=self._url(""),
            authorization_endpoint=self._url("/authorize"),
            token_endpoint=self._url("/token"),
            jwks_uri=self._url("/jwks"),
            registration_endpoint=self._url("/register") if self.allow_registration else None,
            scopes_supported=self.scopes_supported,
            response_types_supported=["code"],
            response_modes_supported=["query"],
            grant_types_supported=list(GRANT_TYPES),
            token_endpoint_auth_methods_supported=methods,
            token_endpoint_auth_signing_alg_values_supported=["RS256", "ES256"],
            introspection_endpoint=self._url("/introspect"),
            introspection_endpoint_auth_methods_supported=confidential,
            revocation_endpoint=self._url("/revoke"),
            revocation_endpoint_auth_methods_supported=methods,
            code_challenge_methods_supported=["S256"],
            authorization_response_iss_parameter_supported=True,
            client_id_metadata_document_supported=True,
        )

    async def _get_metadata(self, request: HttpRequest) -> tuple[int, Any, list[tuple[str, str]]]:
        return 200, md.encode(self.metadata()), []

    async def _get_openid_configuration(
        self, request: HttpRequest
    ) -> tuple[int, Any, list[tuple[str, str]]]:
        document = msgspec.structs.replace(
            self.metadata(),
            subject_types_supported=["public"],
            id_token_signing_alg_values_supported=[self.algorithm],
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
            "GET"
            if path in (md.OAUTH_AS_WELL_KNOWN, md.OIDC_WELL_KNOWN, "/jwks", "/authorize")
            else "POST"
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

    # ------------------------------------------------------------ helpers

    def _form(self, request: HttpRequest) -> dict[str, list[str]]:
        content_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        if content_type != "application/x-www-form-urlencoded":
            raise OAuthError(
                "invalid_request", "the body must be application/x-www-form-urlencoded"
            )
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

    # -------------------------------------------------------- registration

    def _check_registration(
        self, metadata: md.ClientMetadata, method: str, grants: Sequence[str]
    ) -> list[str]:
        """Refuse client metadata this server cannot serve; the response types."""
        if method not in self.auth_methods:
            raise OAuthError(
                "invalid_client_metadata", f"unsupported token_endpoint_auth_method {method!r}"
            )
        unknown = [g for g in grants if g not in GRANT_TYPES]
        if unknown:
            raise OAuthError("invalid_client_metadata", f"unsupported grant type {unknown[0]!r}")
        if "client_credentials" in grants and method == "none":
            raise OAuthError(
                "invalid_client_metadata", "client_credentials needs a confidential client"
            )
        responses = metadata.response_types or (["code"] if "authorization_code" in grants else [])
        if any(r != "code" for r in responses):
            raise OAuthError(
                "invalid_client_metadata", "only the 'code' response type is supported"
            )
        redirects = metadata.redirect_uris or []
        if "authorization_code" in grants and not redirects:
            raise OAuthError(
                "invalid_redirect_uri", "redirect_uris is required for the authorization_code grant"
            )
        for uri in redirects:
            problem = _check_redirect_uri(uri)
            if problem is not None:
                raise OAuthError("invalid_redirect_uri", problem)
        if method == "private_key_jwt" and not metadata.jwks:
            raise OAuthError(
                "invalid_client_metadata",
                "private_key_jwt needs the client's public keys in 'jwks'",
            )
        if metadata.jwks is not None and not isinstance(metadata.jwks.get("keys"), list):
            raise OAuthError(
                "invalid_client_metadata", "'jwks' must be a JWK Set ({'keys': [...]})"
            )
        if metadata.scope is not None:
            self._scopes(metadata.scope, [], error="invalid_client_metadata")
        return list(responses)

    def _register(
        self,
        metadata: md.ClientMetadata,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
    ) -> md.ClientInformation:
        method = metadata.token_endpoint_auth_method or "client_secret_basic"  # RFC 7591 2
        grants = metadata.grant_types or ["authorization_code"]
        responses = self._check_registration(metadata, method, grants)
        self._forget_old_clients()
        client_id = client_id or secrets.token_urlsafe(16)
        secret = None
        if method in ("client_secret_basic", "client_secret_post"):
            secret = client_secret or secrets.token_urlsafe(32)
        fields = {
            f: getattr(metadata, f) for f in metadata.__struct_fields__ if f not in ("client_id",)
        }
        fields.update(
            token_endpoint_auth_method=method,
            grant_types=list(grants),
            response_types=list(responses),
        )
        info = md.ClientInformation(
            **fields,
            client_id=client_id,
            client_secret=secret,
            client_id_issued_at=int(time.time()),
            client_secret_expires_at=0 if secret else None,
        )
        self.clients[client_id] = info
        return info

    async def _client(self, client_id: str) -> md.ClientInformation | None:
        """A registered client, or the one a Client ID Metadata Document URL describes."""
        client = self.clients.get(client_id)
        if client is not None or not self._is_metadata_url(client_id):
            return client
        now = time.monotonic()
        cached = self._documents.get(client_id)
        if cached is not None and cached[0] > now:
            return cached[1]
        client = await self._fetch_client_document(client_id)
        self._documents[client_id] = (now + 300.0, client)
        while len(self._documents) > self.max_clients:
            self._documents.pop(next(iter(self._documents)))
        return client

    def _is_metadata_url(self, client_id: str) -> bool:
        try:
            parts = urllib.parse.urlsplit(client_id)
        except ValueError:
            return False
        if parts.scheme == "https":
            return bool(parts.netloc) and parts.path not in ("", "/")
        return self.allow_http_client_documents and _is_loopback(parts)

    async def _fetch_client_document(self, url: str) -> md.ClientInformation:
        """Client ID Metadata Documents: the document at ``client_id`` is the
        client's registration.  It must name itself, have redirect URIs and no
        shared secret (such clients are public, or use ``private_key_jwt``)."""
        try:
            reply = await self._http.get(url, follow=0)
        except Failure as exc:
            raise OAuthError(
                "invalid_client", f"cannot fetch the client document: {exc.message}"
            ) from None
        if reply.status != 200:
            raise OAuthError("invalid_client", f"the client document answered HTTP {reply.status}")
        try:
            document = md.decode(reply.body, md.ClientMetadata)
        except md.MetadataError as exc:
            raise OAuthError("invalid_client", f"bad client document: {exc}") from None
        if document.client_id != url:
            raise OAuthError("invalid_client", "the client document's client_id is not its URL")
        method = document.token_endpoint_auth_method or "none"
        if method not in ("none", "private_key_jwt"):
            raise OAuthError("invalid_client", f"a client document cannot use {method}")
        fields = {f: getattr(document, f) for f in document.__struct_fields__}
        fields.update(
            token_endpoint_auth_method=method,
            grant_types=document.grant_types or ["authorization_code", "refresh_token"],
        )
        metadata = md.ClientMetadata(**{k: v for k, v in fields.items() if k != "client_id"})
        try:
            self._check_registration(metadata, method, fields["grant_types"])
        except OAuthError as exc:
            raise OAuthError("invalid_client", f"bad client document: {exc.description}") from None
        return md.ClientInformation(**fields)

    def _forget_old_clients(self) -> None:
        dynamic = [cid for cid in self.clients if cid not in self._preregistered]
        while len(self.clients) >= self.max_clients and dynamic:
            self.clients.pop(dynamic.pop(0), None)

    async def _registration(self, request: HttpRequest) -> tuple[int, Any, list[tuple[str, str]]]:
        content_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        if content_type != "application/json":
            raise OAuthError(
                "invalid_client_metadata", "the registration request must be application/json"
            )
        try:
            raw = json.loads(request.body)
        except (ValueError, RecursionError):
            raise OAuthError("invalid_client_metadata", "the body is not JSON") from None
        if not isinstance(raw, dict):
            raise OAuthError("invalid_client_metadata", "the body must be a JSON object")
        raw.pop("client_id", None)  # the server picks identifiers, never the client
        raw.pop("client_secret", None)
        try:
            metadata = md.decode(json.dumps(raw), md.ClientMetadata)
        except md.MetadataError as exc:
            raise OAuthError("invalid_client_metadata", str(exc)) from None
        info = self._register(metadata)
        return 201, md.encode(info), list(NO_STORE)

    # ------------------------------------------------------- authorization

    async def _authorize(self, request: HttpRequest) -> tuple[int, Any, list[tuple[str, str]]]:
        try:
            query = parse_form(request.query, repeatable=("resource",))
        except FormError as exc:
            raise OAuthError("invalid_request", str(exc)) from None
        client_id = first(query, "client_id")
        client = await self._client(client_id) if client_id else None
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
                ("iss", self.issuer),
            ]
            return 302, None, [("location", _with_query(redirect_uri, params))]
        params = [("code", code), ("state", state), ("iss", self.issuer)]
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
            raise OAuthError(
                "unauthorized_client", "this client may not use the authorization code grant"
            )
        challenge = first(query, "code_challenge")
        method = first(query, "code_challenge_method") or "plain"
        if challenge is None:
            raise OAuthError("invalid_request", "PKCE is required: code_challenge is missing")
        if method != "S256":
            raise OAuthError("invalid_request", "code_challenge_method must be S256")
        if not _PKCE_VALUE.match(challenge):
            raise OAuthError("invalid_request", "code_challenge is malformed")
        scopes = self._scopes(first(query, "scope"), self._client_default_scopes(client))
        resources = self._check_resources(query.get("resource", []))
        if not self.auto_approve:
            raise OAuthError("access_denied", "the user denied the request")
        self._expire()
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

    # ---------------------------------------------------------------- token

    async def _token(self, request: HttpRequest) -> tuple[int, Any, list[tuple[str, str]]]:
        form = self._form(request)
        client = await self._authenticate(request, form)
        grant_type = _required(form, "grant_type")
        if grant_type not in GRANT_TYPES:
            raise OAuthError(
                "unsupported_grant_type", f"grant_type {grant_type!r} is not supported"
            )
        if grant_type not in (client.grant_types or []):
            raise OAuthError(
                "unauthorized_client", f"this client may not use the {grant_type} grant"
            )
        if grant_type == "authorization_code":
            document = self._redeem_code(client, form)
        elif grant_type == "refresh_token":
            document = self._refresh(client, form)
        else:
            document = self._client_credentials(client, form)
        return 200, document, list(NO_STORE)

    def _redeem_code(
        self, client: md.ClientInformation, form: dict[str, list[str]]
    ) -> dict[str, Any]:
        code_value = _required(form, "code")
        verifier = _required(form, "code_verifier", " (PKCE is required)")
        code = self._codes.get(code_value)
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
            raise OAuthError(
                "invalid_grant", "redirect_uri does not match the authorization request"
            )
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
        asked = self._check_resources(form.get("resource", []))
        if not asked:
            return granted
        if granted:
            outside = [r for r in asked if r not in granted]
            if outside:
                raise OAuthError(
                    "invalid_target", f"{outside[0]!r} was not part of the authorization"
                )
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
        scopes = self._scopes(first(form, "scope"), grant.scopes)
        wider = [s for s in scopes if s not in grant.scopes]
        if wider:
            raise OAuthError("invalid_scope", f"scope {wider[0]!r} was not granted")
        resources = self._narrow_resources(form, grant.resources)
        grant.retired.add(value)
        return self._token_response(client, grant, scopes, resources)

    def _client_credentials(
        self, client: md.ClientInformation, form: dict[str, list[str]]
    ) -> dict[str, Any]:
        scopes = self._scopes(first(form, "scope"), self._client_default_scopes(client))
        resources = self._check_resources(form.get("resource", []))
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
        token, expires_in = self._access_token(grant, scopes, resources, None, None)
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

    def _access_token(
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
            audience = self.default_resource or self._url("")
        jti = secrets.token_urlsafe(16)
        body: dict[str, Any] = {
            "iss": self._url(""),
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
        self._expire()
        self._grants_by_token[jti] = grant
        self._token_expiry[jti] = body["exp"] if isinstance(body["exp"], int | float) else now
        return self._keys[0].sign(body), lifetime

    # ------------------------------------------------------ client auth

    async def _authenticate(
        self, request: HttpRequest, form: dict[str, list[str]]
    ) -> md.ClientInformation:
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
        if method not in self.auth_methods:
            raise OAuthError(
                "invalid_client", f"{method} client authentication is not accepted here", 401
            )
        if method == "private_key_jwt":
            client_id = self._assertion_subject(form, client_id)
        if client_id is None:
            raise OAuthError("invalid_client", "no client authentication and no client_id", 401)
        try:
            client = await self._client(client_id)
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
            raise OAuthError(
                "invalid_client", f"client_assertion_type must be {CLIENT_ASSERTION_TYPE}", 401
            )
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
                raise OAuthError(
                    "invalid_client", "no registered key matches the client_assertion", 401
                )
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
                        audience=[self._url(""), self._url("/token")],
                        issuer=str(client.client_id),
                        options={"require": ["exp", "iss", "sub", "aud", "jti"]},
                    )
                    break
                except jwt.InvalidSignatureError:
                    continue
            if claims is None:
                raise OAuthError(
                    "invalid_client", "client_assertion signature does not verify", 401
                )
        except jwt.PyJWTError as exc:
            raise OAuthError("invalid_client", f"client_assertion refused: {exc}", 401) from None
        self._expire()
        jti = str(claims["jti"])
        if jti in self._seen_assertions:
            raise OAuthError("invalid_client", "client_assertion was already used", 401)
        self._seen_assertions[jti] = float(claims["exp"])

    # ------------------------------------------ introspection and revocation

    def _token_grant(self, token: str) -> tuple[dict[str, Any], _Grant] | None:
        """The claims and grant of one of its own live access tokens."""
        jwt = _jose()
        try:
            header = jwt.get_unverified_header(token)
            key = next((k for k in self._keys if k.kid == header.get("kid")), None)
            if key is None:
                return None
            claims = jwt.decode(
                token,
                key.private_key.public_key(),
                algorithms=[key.algorithm],
                options={"verify_aud": False, "require": ["exp", "jti"]},
                issuer=self._url(""),
            )
        except jwt.PyJWTError:
            return None
        grant = self._grants_by_token.get(str(claims["jti"]))
        if grant is None or grant.revoked:
            return None
        return claims, grant

    async def _introspect(self, request: HttpRequest) -> tuple[int, Any, list[tuple[str, str]]]:
        form = self._form(request)
        client = await self._authenticate(request, form)
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
                "iss": self._url(""),
            }
            return 200, document, list(NO_STORE)
        return 200, {"active": False}, list(NO_STORE)

    async def _revoke(self, request: HttpRequest) -> tuple[int, Any, list[tuple[str, str]]]:
        form = self._form(request)
        client = await self._authenticate(request, form)
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


# ------------------------------------------------------------------ command line


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m examples.authorization_server",
        description="Run the example OAuth 2.1 authorization server "
        "(state in memory; for tests and demos).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 (default) picks a free port")
    parser.add_argument("--issuer", help="issuer URL (default: the URL it listens on)")
    parser.add_argument("--scopes", help="space-separated scopes_supported (default: any)")
    parser.add_argument(
        "--resource", action="append", help="a resource tokens may be issued for (repeatable)"
    )
    parser.add_argument("--client", help="pre-register a client with this client_id")
    parser.add_argument(
        "--client-secret", help="its secret (then it authenticates with client_secret_basic)"
    )
    parser.add_argument(
        "--auth-method",
        choices=AUTH_METHODS,
        help="its token endpoint auth method (default: none, or basic with a secret)",
    )
    parser.add_argument(
        "--redirect-uri", action="append", default=[], help="its redirect URI (repeatable)"
    )
    parser.add_argument(
        "--auth-methods",
        help="comma-separated client authentication methods accepted "
        f"(default: {','.join(AUTH_METHODS)})",
    )
    parser.add_argument(
        "--deny", action="store_true", help="deny every authorization request (access_denied)"
    )
    parser.add_argument("--algorithm", choices=("RS256", "ES256"), default="RS256")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: serve until interrupted."""
    args = _parser().parse_args(argv)
    try:
        server = _server_from(args)
    except (OAuthError, ValueError) as exc:
        print(f"error: {getattr(exc, 'description', exc)}", file=sys.stderr)
        return 2

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            url = await nursery.start(server.serve, args.host, args.port)
            print(f"authorization server at {url}", file=sys.stderr, flush=True)

    try:
        trio.run(run)
    except KeyboardInterrupt:
        pass
    return 0


def _server_from(args: argparse.Namespace) -> AuthorizationServer:
    server = AuthorizationServer(
        args.issuer,
        scopes_supported=args.scopes.split() if args.scopes else None,
        resources=args.resource,
        auto_approve=not args.deny,
        algorithm=args.algorithm,
        auth_methods=args.auth_methods.split(",") if args.auth_methods else AUTH_METHODS,
    )
    if args.client:
        method = args.auth_method or ("client_secret_basic" if args.client_secret else "none")
        grants = ["authorization_code", "refresh_token"] if args.redirect_uri else []
        if method != "none":
            grants.append("client_credentials")
        if not grants:
            raise ValueError("a public client needs --redirect-uri")
        server.register_client(
            client_id=args.client,
            client_secret=args.client_secret,
            redirect_uris=args.redirect_uri,
            token_endpoint_auth_method=method,
            grant_types=grants,
        )
    return server

