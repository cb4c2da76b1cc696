"""The clients of the example authorization server: registration (pre-registered
and RFC 7591 dynamic ``/register``) and Client ID Metadata Documents (an ``https``
``client_id`` whose document is the registration).  Their authentication is
``_client_auth``'s.
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.parse
from collections.abc import Sequence
from typing import Any

from mcp_trio.auth import _metadata as md
from mcp_trio.auth._client_http import OAuthHttp
from mcp_trio.auth._server_http import NO_STORE
from mcp_trio.transports.http.client._http11 import Failure
from mcp_trio.transports.http.server import HttpRequest

from ._common import GRANT_TYPES, OAuthError, _is_loopback
from ._policy import _Policy


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


class _ClientRegistry:
    """The registered clients (at most ``max_clients``: the oldest dynamic ones go first)
    and the Client ID Metadata Documents fetched (cached five minutes)."""

    def __init__(self, policy: _Policy, *, max_clients: int, allow_http_client_documents: bool) -> None:
        self.policy = policy
        self.max_clients = max_clients
        self.allow_http_client_documents = allow_http_client_documents
        self.clients: dict[str, md.ClientInformation] = {}
        self._preregistered: set[str] = set()
        self._documents: dict[str, tuple[float, md.ClientInformation]] = {}
        self._http = OAuthHttp(timeout=10.0, max_size=64 * 1024)

    def _check_registration(
        self, metadata: md.ClientMetadata, method: str, grants: Sequence[str]
    ) -> list[str]:
        """Refuse client metadata this server cannot serve; the response types."""
        if method not in self.policy.auth_methods:
            raise OAuthError("invalid_client_metadata", f"unsupported token_endpoint_auth_method {method!r}")
        unknown = [g for g in grants if g not in GRANT_TYPES]
        if unknown:
            raise OAuthError("invalid_client_metadata", f"unsupported grant type {unknown[0]!r}")
        if "client_credentials" in grants and method == "none":
            raise OAuthError("invalid_client_metadata", "client_credentials needs a confidential client")
        responses = metadata.response_types or (["code"] if "authorization_code" in grants else [])
        if any(r != "code" for r in responses):
            raise OAuthError("invalid_client_metadata", "only the 'code' response type is supported")
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
            raise OAuthError("invalid_client_metadata", "'jwks' must be a JWK Set ({'keys': [...]})")
        if metadata.scope is not None:
            self.policy.scopes(metadata.scope, [], error="invalid_client_metadata")
        return list(responses)

    def preregister(
        self, metadata: md.ClientMetadata, client_id: str | None, client_secret: str | None
    ) -> md.ClientInformation:
        """A client kept until the server stops (never dropped for a newer one)."""
        info = self._register(metadata, client_id=client_id, client_secret=client_secret)
        self._preregistered.add(str(info.client_id))
        return info

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
        fields = {f: getattr(metadata, f) for f in metadata.__struct_fields__ if f not in ("client_id",)}
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

    async def client(self, client_id: str) -> md.ClientInformation | None:
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
            raise OAuthError("invalid_client", f"cannot fetch the client document: {exc.message}") from None
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

    async def registration(self, request: HttpRequest) -> tuple[int, Any, list[tuple[str, str]]]:
        content_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        if content_type != "application/json":
            raise OAuthError("invalid_client_metadata", "the registration request must be application/json")
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
