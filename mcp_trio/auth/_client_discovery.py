"""Discovery for the OAuth client, and the error every step of authorizing raises.

Rules (step 1 of :mod:`mcp_trio.auth.client`):

* The protected resource metadata (RFC 9728) comes from the challenge's
  ``resource_metadata`` or the well-known URLs; a document for another
  resource is refused.
* The first of its ``authorization_servers`` is the issuer, whose metadata
  (RFC 8414 or OpenID Connect discovery) must name that same ``issuer``.
* Servers without resource metadata (2025-03-26) get the issuer at their
  origin, and ``/authorize``, ``/token``, ``/register`` when that has no
  metadata either.
* Against SSRF: a ``resource_metadata`` URL must be on the MCP server's own
  origin, and every URL fetched must pass the client's
  :class:`~mcp_trio.auth._client_http.UrlGuard`; a refusal is an
  :class:`AuthorizationError` before any request is made.  Errors name the
  URL and the status, never what a failed response said (except a
  well-formed OAuth error).
"""

from __future__ import annotations

import urllib.parse
from typing import TypeVar

import msgspec

from ..transports.http.client._http11 import Failure
from ._client_http import HttpReply, OAuthHttp, same_origin
from ._metadata import (
    AuthorizationServerMetadata,
    MetadataError,
    OAuthErrorResponse,
    ProtectedResourceMetadata,
    authorization_server_metadata_urls,
    canonical_resource,
    decode,
    protected_resource_metadata_urls,
    resource_matches,
)

_Doc = TypeVar("_Doc", ProtectedResourceMetadata, AuthorizationServerMetadata)


class AuthorizationError(Exception):
    """Authorization could not, or must not, go on (the message says why).

    ``error`` is the OAuth error code when a server refused with one.
    """

    def __init__(self, message: str, *, error: str | None = None) -> None:
        super().__init__(message)
        self.error = error


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


def _absolute(url: str) -> bool:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _error_text(reply: HttpReply) -> str:
    try:
        error = decode(reply.body, OAuthErrorResponse)
    except MetadataError:
        return f"HTTP {reply.status} from {reply.url}"
    return error.error + (f" ({error.error_description})" if error.error_description else "")


def _oauth_error(reply: HttpReply) -> str | None:
    try:
        return decode(reply.body, OAuthErrorResponse).error
    except MetadataError:
        return None


def _guard(http: OAuthHttp, url: str, what: str) -> None:
    """Refuse (before any request) a URL the client's guard does not allow."""
    if http.guard is not None:
        try:
            http.guard.check(url)
        except Failure as exc:
            raise AuthorizationError(f"{what}: {exc}") from None


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
    if metadata_url and not _absolute(metadata_url):
        metadata_url = None  # garbage in the challenge: the well-known URLs still work
    if metadata_url:
        if not same_origin(metadata_url, server_url):
            raise AuthorizationError(
                f"the server named resource metadata at {metadata_url!r}, which is not on "
                f"its own origin ({_origin(server_url)}); refusing to fetch it"
            )
        urls = [metadata_url, *(u for u in urls if u != metadata_url)]
    found = await _first_document(http, urls, ProtectedResourceMetadata, "protected resource metadata")
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
    _guard(http, issuer, "the authorization server")
    urls = authorization_server_metadata_urls(issuer)
    found = await _first_document(http, urls, AuthorizationServerMetadata, "authorization server metadata")
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
    _guard(http, server_url, "the MCP server")
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
        return Discovery(server_url=server_url, resource=resource, issuer=metadata.issuer, metadata=metadata)
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
