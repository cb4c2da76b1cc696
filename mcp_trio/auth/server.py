"""The MCP server as an OAuth 2.1 protected resource.

:class:`ResourceServer` guards the HTTP endpoints of a server (Streamable
HTTP, and the legacy HTTP+SSE one) and the WebSocket handshake
(:meth:`ResourceServer.admit`), and serves its RFC 9728 protected resource
metadata; the MCP session core never sees any of it.

For every request on a guarded endpoint:

* no ``Authorization: Bearer`` token → **401** with ``WWW-Authenticate:
  Bearer resource_metadata="…"`` (and ``scope="…"`` when the endpoint needs
  scopes), no error code (RFC 6750 3.1);
* a malformed ``Authorization`` header, or a token in the query string →
  **400** ``error="invalid_request"``;
* a token the verifier refuses, an expired one, or one not issued for this
  resource (RFC 8707: its audience must name this server) → **401**
  ``error="invalid_token"``;
* a token without the endpoint's ``required_scopes``, or a ``tools/call`` of
  a tool whose ``tool_scopes`` it lacks → **403** ``error="insufficient_scope"``
  with the ``scope`` needed (the token's scopes plus the missing ones, so a
  step-up keeps what the client had).  The body is read as the session reads
  it (the same decoder: ``"tools\\/call"`` is a ``tools/call``; a batch is
  checked message by message); what the session cannot decode, it answers
  itself and runs nothing;
* otherwise the request goes on **without** its ``Authorization`` header
  (tokens are never passed further) and with the verified
  :class:`AccessToken` attached, which handlers read as ``ctx.auth``, and
  with its principal (:meth:`ResourceServer.principal`: the token's issuer
  and subject): a session belongs to the principal that opened it, and a
  request of anyone else naming it is answered as for an unknown session
  (404).

Verifiers (:class:`TokenVerifier`): :class:`JWTVerifier` (JWT access tokens,
keys from a JWKS URL, algorithms pinned), :class:`IntrospectionVerifier`
(RFC 7662) and :class:`CallbackVerifier` (your own function).  A verifier
that cannot reach its authorization server raises
:class:`VerifierUnavailable`, answered with 503 rather than a 401 that would
send the client to authorize again.

Usage::

    from mcp_trio.auth.server import JWTVerifier, ResourceServer

    auth = ResourceServer(
        "https://mcp.example.com/mcp",
        authorization_servers=["https://auth.example.com"],
        verifier=JWTVerifier("https://auth.example.com/jwks", issuer="https://auth.example.com"),
        required_scopes=["mcp"],
        tool_scopes={"delete_file": ["files:write"]},
    )
    await server.serve_http("127.0.0.1", 3001, auth=auth)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

import msgspec
from msgspec import UNSET

from .. import _jsonrpc as rpc
from ..transports.http._request import Handler, HttpRequest, Responder
from ..transports.websocket import Admission
from . import _metadata as md
from ._server_http import FormError, challenge, parse_form, send_json
from ._server_verifiers import DEFAULT_ALGORITHMS as DEFAULT_ALGORITHMS
from ._server_verifiers import (
    AccessToken,
    CallbackVerifier,
    IntrospectionVerifier,
    InvalidToken,
    JWTVerifier,
    TokenVerifier,
    VerifierUnavailable,
)

__all__ = [
    "AccessToken",
    "CallbackVerifier",
    "IntrospectionVerifier",
    "InvalidToken",
    "JWTVerifier",
    "Refusal",
    "ResourceServer",
    "TokenVerifier",
    "VerifierUnavailable",
]

log = logging.getLogger("mcp_trio.auth")


@dataclass
class Refusal:
    """Why :meth:`ResourceServer.check` refused a request: the HTTP status, the
    RFC 6750 error code (``None`` when no token was offered), a description,
    and the ``scope`` to put in the challenge."""

    status: int
    error: str | None
    description: str
    scope: str | None = None


class ResourceServer:
    """The resource-server side of MCP authorization (see the module docstring).

    Args:
        resource: This server's canonical URI (the MCP endpoint's URL, e.g.
            ``https://mcp.example.com/mcp``); ``None`` until
            :meth:`bind_resource` (``Server.serve_http`` calls it with the
            bound URL).
        authorization_servers: Issuer URLs of the authorization servers.
        verifier: Checks tokens (:class:`TokenVerifier`).
        required_scopes: Scopes every request needs.
        tool_scopes: Tool name → scopes a ``tools/call`` of it needs.
        scopes_supported: Advertised in the metadata (default: every scope
            named above).
        audiences: More audience values accepted besides ``resource``.
        check_audience: Refuse tokens not issued for this resource (RFC 8707;
            the MCP specification requires it; turn off only for a verifier
            whose tokens carry no audience and are checked otherwise).
        resource_name, resource_documentation: Metadata fields.
    """

    def __init__(
        self,
        resource: str | None,
        *,
        authorization_servers: Sequence[str],
        verifier: TokenVerifier,
        required_scopes: Iterable[str] = (),
        tool_scopes: Mapping[str, Iterable[str]] | None = None,
        scopes_supported: Iterable[str] | None = None,
        audiences: Iterable[str] = (),
        check_audience: bool = True,
        resource_name: str | None = None,
        resource_documentation: str | None = None,
    ) -> None:
        self.resource = md.canonical_resource(resource) if resource else None
        self.authorization_servers = list(authorization_servers)
        self.verifier = verifier
        self.required_scopes = list(dict.fromkeys(required_scopes))
        self.tool_scopes = {name: list(dict.fromkeys(s)) for name, s in (tool_scopes or {}).items()}
        if scopes_supported is None:
            named = [
                *self.required_scopes,
                *(s for scopes in self.tool_scopes.values() for s in scopes),
            ]
            scopes_supported = list(dict.fromkeys(named)) or None
        self.scopes_supported = list(scopes_supported) if scopes_supported is not None else None
        self.audiences = list(audiences)
        self.check_audience = check_audience
        self.resource_name = resource_name
        self.resource_documentation = resource_documentation

    # ------------------------------------------------------------ metadata

    def bind_resource(self, url: str) -> None:
        """Take ``url`` as the resource identifier unless one was given."""
        if self.resource is None:
            self.resource = md.canonical_resource(url)

    def _resource_for(self, request: HttpRequest) -> str:
        """The resource identifier; before :meth:`bind_resource`, the request's
        own URL (its Host header has passed the endpoint's Host allow-list)."""
        if self.resource is not None:
            return self.resource
        return _url_of(request, request.path)

    def metadata(self, resource: str | None = None) -> md.ProtectedResourceMetadata:
        """The RFC 9728 document."""
        return md.ProtectedResourceMetadata(
            resource=resource or self.resource or "",
            authorization_servers=self.authorization_servers,
            scopes_supported=self.scopes_supported,
            bearer_methods_supported=["header"],
            resource_name=self.resource_name,
            resource_documentation=self.resource_documentation,
        )

    def metadata_url(self, resource: str | None = None) -> str:
        """Where the metadata is: the well-known path inserted before the resource's path."""
        return md.protected_resource_metadata_url(resource or self.resource or "")

    def metadata_routes(self, path: str) -> dict[str, Handler]:
        """``path -> handler`` serving the metadata, for a front door's
        ``routes``: ``/.well-known/oauth-protected-resource<path>`` and the
        root ``/.well-known/oauth-protected-resource``."""
        handler = _MetadataEndpoint(self, path)
        suffixed = md.PRM_WELL_KNOWN + ("/" + path.strip("/") if path.strip("/") else "")
        return {suffixed: handler, md.PRM_WELL_KNOWN: handler}

    # --------------------------------------------------------------- guard

    def protect(self, endpoint: Handler) -> Handler:
        """``endpoint`` behind the bearer-token check."""
        return _Guarded(self, endpoint)

    async def check(self, request: HttpRequest) -> AccessToken | Refusal:
        """The verified token of ``request``, or why it is refused."""
        if "access_token" in (_query(request.query) or {}):
            return Refusal(400, "invalid_request", "access tokens must not be sent in the URI")
        header = request.headers.get("authorization")
        if header is None:
            return Refusal(401, None, "an access token is required", self._scope_hint())
        scheme, _, token = header.strip().partition(" ")
        if scheme.lower() != "bearer":
            return Refusal(401, None, "a Bearer access token is required", self._scope_hint())
        token = token.strip()
        if not token or " " in token or "," in token:
            return Refusal(400, "invalid_request", "malformed Authorization header")
        try:
            info = await self.verifier.verify(token)
        except InvalidToken as exc:
            return Refusal(401, "invalid_token", str(exc) or "the token is not valid", self._scope_hint())
        if info.expires_at is not None and info.expires_at <= time.time():
            return Refusal(401, "invalid_token", "the token has expired", self._scope_hint())
        if self.check_audience and not self._audience_ok(info, self._resource_for(request)):
            return Refusal(
                401,
                "invalid_token",
                "the token was not issued for this resource",
                self._scope_hint(),
            )
        needed = [*self.required_scopes, *self._tool_scopes(request)]
        missing = [s for s in dict.fromkeys(needed) if s not in info.scopes]
        if missing:
            scope = " ".join(dict.fromkeys([*sorted(info.scopes), *needed]))
            return Refusal(403, "insufficient_scope", f"the request needs scope {' '.join(missing)}", scope)
        return info

    def principal(self, token: AccessToken) -> Hashable:
        """Whom ``token`` speaks for, the owner of the sessions it opens: its
        issuer and subject (the client id in place of a missing subject)."""
        if token.subject is not None:
            return ("subject", token.issuer, token.subject)
        return ("client", token.issuer, token.client_id)

    def _scope_hint(self) -> str | None:
        return " ".join(self.required_scopes) or None

    def _audience_ok(self, info: AccessToken, resource: str) -> bool:
        accepted = {resource, *self.audiences}
        for audience in info.audience:
            try:
                if md.canonical_resource(audience) in accepted:
                    return True
            except md.MetadataError:
                if audience in accepted:
                    return True
        return False

    def _tool_scopes(self, request: HttpRequest) -> list[str]:
        """Scopes the ``tools/call`` requests of a POST body need."""
        if request.method != "POST" or not self.tool_scopes:
            return []
        return self._scopes_of_calls(_decoded(request.body).calls)

    def _scopes_of_calls(self, calls: list[str]) -> list[str]:
        """Scopes ``tools/call`` requests of the tools named ``calls`` need."""
        return [s for name in calls for s in self.tool_scopes.get(name, [])]

    # ----------------------------------------------------------- WebSocket

    async def admit(self, request: HttpRequest, responder: Responder) -> Admission | None:
        """Guard a WebSocket handshake (``WebSocketEndpoint(auth=...)``).

        The upgrade request is checked exactly as an HTTP request (refusals
        go out through ``responder``, answered as the handshake's refusal, and
        ``None`` is returned).  An admitted connection keeps the token as
        every request's ``ctx.auth``, is closed when the token expires, and has
        its ``tools/call`` requests checked against ``tool_scopes`` message by
        message (:meth:`screen`), since a WebSocket has no per-message status.
        """
        admitted = _Admitted()
        await _Guarded(self, admitted).handle(request, responder)
        if admitted.token is None:
            return None
        token = admitted.token
        screen = partial(self.screen, token, self._resource_for(request))
        return Admission(token, token.expires_at, screen if self.tool_scopes else None)

    def screen(self, token: AccessToken, resource: str, data: bytes) -> bytes | None:
        """The JSON-RPC error answering a message (or batch) with a
        ``tools/call`` whose ``tool_scopes`` ``token`` lacks, else ``None``.

        The whole message is refused, as HTTP refuses the whole POST: every
        request in it gets error -32600 (Invalid Request; the MCP specification
        defines no code for this and asks for none to be invented in the
        reserved range) with ``data`` holding what a 403 challenge would say:
        ``error: "insufficient_scope"``, ``error_description``, ``scope`` (the
        token's scopes plus the missing ones) and ``resource_metadata``.  A
        refused message with no request id to answer is dropped (``b""``).
        """
        if not self.tool_scopes:
            return None
        decoded = _decoded(data)
        needed = self._scopes_of_calls(decoded.calls)
        missing = [s for s in dict.fromkeys(needed) if s not in token.scopes]
        if not missing:
            return None
        description = f"the request needs scope {' '.join(missing)}"
        detail = {
            "error": "insufficient_scope",
            "error_description": description,
            "scope": " ".join(dict.fromkeys([*sorted(token.scopes), *needed])),
            "resource_metadata": self.metadata_url(resource),
        }
        ids = decoded.ids
        errors = [rpc.encode_error(i, rpc.INVALID_REQUEST, description, detail) for i in ids]
        if not errors:
            return b""  # no request to answer (a call without a usable id): just dropped
        if decoded.batch:
            return b"[" + b",".join(errors) + b"]"
        return errors[0]

    def challenge(self, refusal: Refusal, resource: str) -> str:
        """The ``WWW-Authenticate`` value for a refusal."""
        return challenge(
            "Bearer",
            [
                ("error", refusal.error),
                ("error_description", refusal.description if refusal.error else None),
                ("scope", refusal.scope),
                ("resource_metadata", self.metadata_url(resource)),
            ],
        )


class _ToolName(msgspec.Struct, gc=False):
    """The one member of ``tools/call`` params a scope depends on."""

    name: Any = UNSET


_tool_name: Final = msgspec.json.Decoder(_ToolName)
_UNDECODABLE = (msgspec.DecodeError, UnicodeDecodeError, RecursionError)  # (ValidationError is one)


@dataclass
class _Decoded:
    """What the session will make of a body or WebSocket message: the tools
    its ``tools/call`` requests name, the ids of its requests, whether it is a batch."""

    calls: list[str]
    ids: list[int | str]
    batch: bool


def _decoded(data: bytes) -> _Decoded:
    """Read ``data`` as the session does (:meth:`SessionCore.receive`): a batch
    when it opens with ``[`` after JSON whitespace, each message's envelope
    with :func:`rpc.decode_envelope`, so escapes (``"tools\\/call"``),
    repeated members and everything else mean what they mean to the session.
    What the session cannot decode it answers itself, and runs nothing."""
    batch = data.lstrip(b" \t\r\n")[:1] == b"["
    try:
        items: list[bytes | msgspec.Raw] = list(rpc.decode_batch(data)) if batch else [data]
    except _UNDECODABLE:
        return _Decoded([], [], batch)
    calls: list[str] = []
    ids: list[int | str] = []
    for item in items:
        try:
            env = rpc.decode_envelope(item)
        except _UNDECODABLE:
            salvaged = _salvage_id(item)  # the session answers it with this id
            if salvaged is not None:
                ids.append(salvaged)
            continue
        if isinstance(env.id, int | str):  # (never a bool: the envelope refuses one)
            ids.append(env.id)
        if env.method != "tools/call" or env.params is UNSET:
            continue
        try:
            name = _tool_name.decode(env.params).name
        except _UNDECODABLE:
            continue  # not params the session takes: it answers -32602, runs nothing
        if isinstance(name, str):
            calls.append(name)
    return _Decoded(calls, ids, batch)


def _salvage_id(item: bytes | msgspec.Raw) -> int | str | None:
    try:
        return rpc.salvage_id(item)
    except _UNDECODABLE:
        return None


class _Admitted:
    """The endpoint behind the guard of a WebSocket handshake: reaching it means
    the token was accepted."""

    max_body_size = 0

    def __init__(self) -> None:
        self.token: AccessToken | None = None

    async def handle(self, request: HttpRequest, responder: Responder) -> None:
        self.token = request.auth


def _url_of(request: HttpRequest, path: str) -> str:
    """``http://<Host><path>``, canonical (a Host header that makes no URL counts as localhost)."""
    try:
        return md.canonical_resource(f"http://{request.headers.get('host', 'localhost')}{path}")
    except (md.MetadataError, ValueError):
        return md.canonical_resource(f"http://localhost{path}")


def _query(query: str) -> dict[str, list[str]] | None:
    try:
        return parse_form(query, repeatable=("access_token",))
    except FormError:
        return None


class _Guarded:
    """An endpoint behind :meth:`ResourceServer.check`."""

    def __init__(self, owner: ResourceServer, inner: Handler) -> None:
        self.owner = owner
        self.inner = inner
        self.max_body_size = inner.max_body_size

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # the endpoint's own settings (guard, limits ...)

    async def handle(self, request: HttpRequest, responder: Responder) -> None:
        guard = getattr(self.inner, "guard", None)
        problem = guard.check(request) if guard is not None else None
        if problem is not None:  # Host / Origin refusals come before anything about tokens
            await self.inner.handle(request, responder)
            return
        try:
            outcome = await self.owner.check(request)
        except VerifierUnavailable as exc:
            document = {"error": "temporarily_unavailable", "error_description": str(exc)}
            await send_json(responder, 503, document, [("retry-after", "5"), ("cache-control", "no-store")])
            return
        if isinstance(outcome, Refusal):
            log.debug(
                "refused %s %s: %d %s",
                request.method,
                request.path,
                outcome.status,
                outcome.description,
            )
            resource = self.owner._resource_for(request)
            document = {"error_description": outcome.description}
            if outcome.error:
                document = {"error": outcome.error, **document}
            headers = [
                ("www-authenticate", self.owner.challenge(outcome, resource)),
                ("cache-control", "no-store"),
            ]
            await send_json(responder, outcome.status, document, headers)
            return
        request.headers.pop("authorization", None)  # never passed further
        request.auth = outcome
        request.principal = self.owner.principal(outcome)
        await self.inner.handle(request, responder)


class _MetadataEndpoint:
    """Serves the RFC 9728 document (GET only, no token needed)."""

    max_body_size = 0

    def __init__(self, owner: ResourceServer, path: str) -> None:
        self.owner = owner
        self.path = "/" + path.strip("/") if path.strip("/") else ""

    async def handle(self, request: HttpRequest, responder: Responder) -> None:
        if request.method != "GET":
            await send_json(responder, 405, {"error": "method not allowed"}, [("allow", "GET")])
            return
        resource = self.owner.resource or _url_of(request, self.path)
        document = md.encode(self.owner.metadata(resource))
        await send_json(responder, 200, document, [("cache-control", "max-age=300")])
