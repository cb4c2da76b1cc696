"""The client side of OAuth: a scripted authorization server and protected resource (``Route``,
``Reply``), a headless client that follows the flows, and what it saw (``events``)."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import urllib.parse
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import jwt
import pytest
import trio

from mcp_trio import McpError
from mcp_trio.auth._metadata import ClientMetadata
from mcp_trio.auth.client import (
    AuthorizationCodeGrant,
    HeadlessRedirect,
    OAuthClient,
)
from mcp_trio.client import connect_http
from mcp_trio.server import Server
from mcp_trio.transports.http.server import HttpRequest, Responder, StreamableHTTP, serve_h11

REDIRECT = "http://127.0.0.1:1/callback"


Reply = tuple[int, list[tuple[str, str]], bytes]


def json_reply(status: int, body: Any, headers: Sequence[tuple[str, str]] = ()) -> Reply:
    return status, [("content-type", "application/json"), *headers], json.dumps(body).encode()


class Route:
    """A path served by a plain function (request -> reply)."""

    max_body_size = 64 * 1024

    def __init__(self, func: Callable[[HttpRequest], Reply]) -> None:
        self.func = func

    async def handle(self, request: HttpRequest, responder: Responder) -> None:
        status, headers, body = self.func(request)
        await responder.start(status, [*headers, ("content-length", str(len(body)))])
        await responder.send(body)
        await responder.end()


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class AS:
    """A small authorization server that checks everything it is sent."""

    base: str = ""
    issuer_override: str | None = None
    pkce_methods: list[str] | None = field(default_factory=lambda: ["S256"])
    auth_methods: list[str] = field(
        default_factory=lambda: ["client_secret_basic", "client_secret_post", "none"]
    )
    scopes_supported: list[str] | None = None
    registration: bool = True
    cimd: bool = False
    send_iss: str | None = "correct"
    iss_supported: bool | None = True
    refresh: bool = False
    dpop_algs: list[str] | None = None
    dpop_nonce: str | None = None
    client_public_key: Any = None
    bad_state: bool = False
    grantable: set[str] | None = None  # scopes it ever grants (None: all asked for)
    publish_metadata: bool = True
    expires_in: int = 3600
    log: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    clients: dict[str, str | None] = field(default_factory=dict)
    codes: dict[str, dict[str, str]] = field(default_factory=dict)
    tokens: dict[str, set[str]] = field(default_factory=dict)
    refresh_tokens: dict[str, set[str]] = field(default_factory=dict)
    token_keys: dict[str, str] = field(default_factory=dict)  # token -> DPoP jkt
    failures: list[str] = field(default_factory=list)

    @property
    def issuer(self) -> str:
        return self.issuer_override or self.base

    def routes(self) -> dict[str, Route]:
        return {
            "/.well-known/oauth-authorization-server": Route(self.metadata),
            "/authorize": Route(self.authorize),
            "/token": Route(self.token),
            "/register": Route(self.register),
        }

    def metadata(self, request: HttpRequest) -> Reply:
        self.log.append(("metadata", {}))
        if not self.publish_metadata:
            return json_reply(404, {"error": "not_found"})
        doc: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.base}/authorize",
            "token_endpoint": f"{self.base}/token",
            "response_types_supported": ["code"],
            "token_endpoint_auth_methods_supported": self.auth_methods,
        }
        if self.registration:
            doc["registration_endpoint"] = f"{self.base}/register"
        if self.pkce_methods is not None:
            doc["code_challenge_methods_supported"] = self.pkce_methods
        if self.scopes_supported is not None:
            doc["scopes_supported"] = self.scopes_supported
        if self.cimd:
            doc["client_id_metadata_document_supported"] = True
        if self.iss_supported is not None:
            doc["authorization_response_iss_parameter_supported"] = self.iss_supported
        if self.dpop_algs is not None:
            doc["dpop_signing_alg_values_supported"] = self.dpop_algs
        return json_reply(200, doc)

    def register(self, request: HttpRequest) -> Reply:
        body = json.loads(request.body)
        self.log.append(("register", body))
        client_id = f"client-{len(self.clients)}"
        method = body.get("token_endpoint_auth_method", "client_secret_basic")
        secret = None if method == "none" else secrets.token_urlsafe(8)
        self.clients[client_id] = secret
        answer = {**body, "client_id": client_id, "token_endpoint_auth_method": method}
        if secret:
            answer["client_secret"] = secret
        return json_reply(201, answer)

    def authorize(self, request: HttpRequest) -> Reply:
        query = dict(urllib.parse.parse_qsl(request.query))
        self.log.append(("authorize", query))
        code = secrets.token_urlsafe(8)
        self.codes[code] = query
        params = {"code": code, "state": "forged" if self.bad_state else query.get("state", "")}
        if self.send_iss == "correct":
            params["iss"] = self.issuer
        elif self.send_iss is not None:
            params["iss"] = self.send_iss
        location = query["redirect_uri"] + "?" + urllib.parse.urlencode(params)
        return 302, [("location", location)], b""

    def _client_of(self, request: HttpRequest, form: dict[str, str]) -> str | None:
        """The authenticated client id, by whichever method it used (None: refused)."""
        header = request.headers.get("authorization", "")
        if header.startswith("Basic "):
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            user, password = urllib.parse.unquote(user), urllib.parse.unquote(password)
            self.log.append(("auth-method", {"method": "client_secret_basic"}))
            return user if self.clients.get(user) == password else None
        if "client_assertion" in form:
            self.log.append(("auth-method", {"method": "private_key_jwt"}))
            claims = jwt.decode(
                form["client_assertion"],
                self.client_public_key,
                algorithms=["ES256"],
                audience=self.issuer,
            )
            return str(claims["sub"]) if claims["iss"] == claims["sub"] == form.get("client_id") else None
        if "client_secret" in form:
            self.log.append(("auth-method", {"method": "client_secret_post"}))
            return form["client_id"] if self.clients.get(form["client_id"]) == form["client_secret"] else None
        self.log.append(("auth-method", {"method": "none"}))
        client_id = form.get("client_id", "")
        known = client_id in self.clients and self.clients[client_id] is None
        return client_id if known or client_id.startswith("https://") else None

    def _check_dpop(self, request: HttpRequest) -> tuple[str | None, Reply | None]:
        """The proof's key thumbprint, or the error reply (RFC 9449 section 4.3, 8)."""
        proof = request.headers.get("dpop")
        if self.dpop_algs is None or proof is None:
            return None, None
        header = jwt.get_unverified_header(proof)
        key = jwt.PyJWK(header["jwk"], "ES256").key
        claims = jwt.decode(proof, key, algorithms=["ES256"])
        assert (
            header["typ"] == "dpop+jwt" and claims["htm"] == "POST" and claims["htu"] == f"{self.base}/token"
        )
        if self.dpop_nonce is not None and claims.get("nonce") != self.dpop_nonce:
            self.log.append(("dpop-nonce-challenge", {}))
            return None, json_reply(400, {"error": "use_dpop_nonce"}, [("dpop-nonce", self.dpop_nonce)])
        return jwk_thumbprint(header["jwk"]), None

    def token(self, request: HttpRequest) -> Reply:
        form = dict(urllib.parse.parse_qsl(request.body.decode()))
        self.log.append(("token", form))
        jkt, refusal = self._check_dpop(request)
        if refusal is not None:
            return refusal
        client_id = self._client_of(request, form)
        if client_id is None:
            return json_reply(401, {"error": "invalid_client"})
        grant = form.get("grant_type")
        if grant == "authorization_code":
            issued = self.codes.pop(form.get("code", ""), None)
            if issued is None:
                return json_reply(400, {"error": "invalid_grant"})
            verifier = form.get("code_verifier", "")
            if b64url(hashlib.sha256(verifier.encode()).digest()) != issued.get("code_challenge"):
                self.failures.append("PKCE verifier does not match")
                return json_reply(400, {"error": "invalid_grant", "error_description": "PKCE"})
            if form.get("resource") != issued.get("resource") or form.get("redirect_uri") != issued.get(
                "redirect_uri"
            ):
                self.failures.append("resource or redirect_uri differs")
            scopes = set((issued.get("scope") or "").split())
        elif grant == "refresh_token":
            scopes = self.refresh_tokens.get(form.get("refresh_token", ""), set())
            if form.get("refresh_token") not in self.refresh_tokens:
                return json_reply(400, {"error": "invalid_grant"})
        elif grant == "client_credentials":
            scopes = set((form.get("scope") or "").split())
        else:
            return json_reply(400, {"error": "unsupported_grant_type"})
        if self.grantable is not None:
            scopes &= self.grantable
        token = secrets.token_urlsafe(12)
        self.tokens[token] = scopes
        answer: dict[str, Any] = {
            "access_token": token,
            "token_type": "DPoP" if jkt else "Bearer",
            "expires_in": self.expires_in,
        }
        if jkt:
            self.token_keys[token] = jkt
        if self.refresh:
            refresh_token = secrets.token_urlsafe(12)
            self.refresh_tokens[refresh_token] = scopes
            answer["refresh_token"] = refresh_token
        return json_reply(200, answer)


def jwk_thumbprint(jwk: dict[str, str]) -> str:
    """RFC 7638 thumbprint of an EC key."""
    canonical = json.dumps({k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"))
    return b64url(hashlib.sha256(canonical.encode()).digest())


@dataclass
class Gate:
    """The resource server: checks tokens in front of a real Streamable HTTP endpoint."""

    endpoint: StreamableHTTP
    auth_server: AS
    base: str = ""
    prm_url: str | None = None
    scope_hint: str | None = None
    call_scope: str | None = None  # tools/call needs this scope (403 otherwise)
    rs_nonce: str | None = None
    seen: list[dict[str, str]] = field(default_factory=list)
    max_body_size: int = 4 * 1024 * 1024

    def challenge(self, error: str | None = None, scope: str | None = None, scheme: str = "Bearer") -> str:
        parts = []
        if error:
            parts.append(f'error="{error}"')
        if scope or self.scope_hint:
            parts.append(f'scope="{scope or self.scope_hint}"')
        if self.prm_url:
            parts.append(f'resource_metadata="{self.prm_url}"')
        return f"{scheme} " + ", ".join(parts) if parts else scheme

    async def handle(self, request: HttpRequest, responder: Responder) -> None:
        self.seen.append({"query": request.query, **request.headers})
        refusal = self.check(request)
        if refusal is not None:
            status, headers, body = refusal
            await responder.start(status, [*headers, ("content-length", str(len(body)))])
            await responder.send(body)
            await responder.end()
            return
        await self.endpoint.handle(request, responder)

    def check(self, request: HttpRequest) -> Reply | None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if token not in self.auth_server.tokens:
            return json_reply(401, {"error": "invalid_token"}, [("www-authenticate", self.challenge())])
        if token in self.auth_server.token_keys:
            refusal = self.check_dpop(request, token, scheme)
            if refusal is not None:
                return refusal
        method = json.loads(request.body).get("method") if request.body.startswith(b"{") else None
        if (
            self.call_scope
            and method == "tools/call"
            and self.call_scope not in self.auth_server.tokens[token]
        ):
            challenge = self.challenge("insufficient_scope", self.call_scope)
            return json_reply(403, {"error": "insufficient_scope"}, [("www-authenticate", challenge)])
        return None

    def check_dpop(self, request: HttpRequest, token: str, scheme: str) -> Reply | None:
        proof = request.headers.get("dpop", "")
        header = jwt.get_unverified_header(proof)
        claims = jwt.decode(proof, jwt.PyJWK(header["jwk"], "ES256").key, algorithms=["ES256"])
        assert scheme == "DPoP"
        assert jwk_thumbprint(header["jwk"]) == self.auth_server.token_keys[token]
        assert claims["ath"] == b64url(hashlib.sha256(token.encode()).digest())
        assert claims["htm"] == request.method and claims["htu"] == f"{self.base}/mcp"
        if self.rs_nonce is not None and claims.get("nonce") != self.rs_nonce:
            challenge = f'DPoP error="use_dpop_nonce", resource_metadata="{self.prm_url}"'
            return json_reply(
                401,
                {"error": "use_dpop_nonce"},
                [("www-authenticate", challenge), ("dpop-nonce", self.rs_nonce)],
            )
        return None


def make_server() -> Server:
    server = Server("protected", version="1")

    @server.tool
    async def add(a: int, b: int) -> int:
        return a + b

    return server


@dataclass
class Setup:
    url: str
    auth_server: AS
    gate: Gate


@asynccontextmanager
async def protected(
    *,
    auth_server: AS | None = None,
    prm: dict[str, Any] | None | bool = True,
    prm_in_challenge: bool = True,
    extra_routes: dict[str, Route] | None = None,
    **gate_options: Any,
) -> AsyncIterator[Setup]:
    """A protected mcp-trio server and its authorization server, on one origin."""
    auth_server = auth_server or AS()
    endpoint = StreamableHTTP(make_server().serve_session)
    gate = Gate(endpoint, auth_server, **gate_options)
    routes: dict[str, Any] = {**auth_server.routes(), **(extra_routes or {})}
    prm_doc: dict[str, Any] = {}

    def resource_metadata(request: HttpRequest) -> Reply:
        auth_server.log.append(("prm", {}))
        return json_reply(200, prm_doc)

    if prm is not False:
        routes["/.well-known/oauth-protected-resource/mcp"] = Route(resource_metadata)
    async with trio.open_nursery() as nursery:
        await nursery.start(endpoint.run)
        urls = await nursery.start(partial(serve_h11, gate, "127.0.0.1", 0, routes=routes))
        base = urls[0]
        auth_server.base = gate.base = base
        if prm is not False:
            prm_doc.update({"resource": f"{base}/mcp", "authorization_servers": [auth_server.issuer]})
            if isinstance(prm, dict):
                prm_doc.update(prm)
            if prm_in_challenge:
                gate.prm_url = f"{base}/.well-known/oauth-protected-resource/mcp"
        yield Setup(f"{base}/mcp", auth_server, gate)
        nursery.cancel_scope.cancel()


def headless_client(**options: Any) -> OAuthClient:
    options.setdefault("grant", AuthorizationCodeGrant(HeadlessRedirect(REDIRECT)))
    options.setdefault("client_metadata", ClientMetadata(client_name="flow-test"))
    options.setdefault("allow_insecure_loopback", True)
    return OAuthClient(**options)


async def add_numbers(url: str, auth: OAuthClient) -> int:
    with trio.fail_after(10):
        async with connect_http(url, auth=auth) as client:
            result = await client.call_tool("add", {"a": 2, "b": 3})
            return int(result.content[0].text)


def events(auth_server: AS, kind: str) -> list[dict[str, str]]:
    return [params for name, params in auth_server.log if name == kind]


async def refused(url: str, auth: OAuthClient) -> str:
    """The message of the error the client ends with."""
    with trio.fail_after(10), pytest.raises(McpError) as info:
        await add_numbers(url, auth)
    assert info.value.data["reason"] == "auth"
    return str(info.value)
