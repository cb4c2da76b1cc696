"""The documents both sides of MCP authorization exchange, as msgspec Structs, and
the well-known URLs they are found at.

* RFC 9728 protected resource metadata (:class:`ProtectedResourceMetadata`);
* RFC 8414 / OpenID Connect Discovery authorization server metadata
  (:class:`AuthorizationServerMetadata`);
* RFC 7591 dynamic client registration (:class:`ClientMetadata`,
  :class:`ClientInformation`) -- a Client ID Metadata Document is a
  :class:`ClientMetadata` with a ``client_id``;
* RFC 6749 token responses and errors (:class:`TokenResponse`,
  :class:`OAuthErrorResponse`);
* the ``WWW-Authenticate`` challenge (RFC 6750 / RFC 9728 parameters).

Fields are optional unless the RFC makes them required; unknown fields are
ignored on decode (servers add their own) and ``None`` fields are left out on
encode, so a document written here carries only what was set.  Decoding is
strict about types: a document whose ``scopes_supported`` is not a list of
strings is refused rather than half-used.

Sans-IO: no networking here.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any, TypeVar

import msgspec

__all__ = [
    "AuthorizationServerMetadata",
    "Challenge",
    "ClientInformation",
    "ClientMetadata",
    "MetadataError",
    "OAuthErrorResponse",
    "ProtectedResourceMetadata",
    "TokenResponse",
    "authorization_server_metadata_urls",
    "canonical_resource",
    "decode",
    "encode",
    "parse_www_authenticate",
    "protected_resource_metadata_url",
    "protected_resource_metadata_urls",
    "resource_matches",
]

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
OAUTH_AS_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN = "/.well-known/openid-configuration"


class MetadataError(ValueError):
    """A document is not what its RFC says it must be."""


class _Document(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Base of every document: optional fields default to ``None`` and are omitted."""


# ------------------------------------------------------------- RFC 9728


class ProtectedResourceMetadata(_Document):
    """RFC 9728 section 2: what the MCP server (the resource) says about itself."""

    resource: str
    authorization_servers: list[str] | None = None
    jwks_uri: str | None = None
    scopes_supported: list[str] | None = None
    bearer_methods_supported: list[str] | None = None
    resource_signing_alg_values_supported: list[str] | None = None
    resource_name: str | None = None
    resource_documentation: str | None = None
    resource_policy_uri: str | None = None
    resource_tos_uri: str | None = None
    tls_client_certificate_bound_access_tokens: bool | None = None
    authorization_details_types_supported: list[str] | None = None
    dpop_signing_alg_values_supported: list[str] | None = None
    dpop_bound_access_tokens_required: bool | None = None


# ------------------------------------------------------------- RFC 8414


class AuthorizationServerMetadata(_Document):
    """RFC 8414 section 2 (and the OpenID Connect Discovery fields MCP relies on)."""

    issuer: str
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    jwks_uri: str | None = None
    registration_endpoint: str | None = None
    scopes_supported: list[str] | None = None
    response_types_supported: list[str] | None = None
    response_modes_supported: list[str] | None = None
    grant_types_supported: list[str] | None = None
    token_endpoint_auth_methods_supported: list[str] | None = None
    token_endpoint_auth_signing_alg_values_supported: list[str] | None = None
    service_documentation: str | None = None
    revocation_endpoint: str | None = None
    revocation_endpoint_auth_methods_supported: list[str] | None = None
    introspection_endpoint: str | None = None
    introspection_endpoint_auth_methods_supported: list[str] | None = None
    code_challenge_methods_supported: list[str] | None = None
    authorization_response_iss_parameter_supported: bool | None = None
    client_id_metadata_document_supported: bool | None = None
    dpop_signing_alg_values_supported: list[str] | None = None
    userinfo_endpoint: str | None = None
    subject_types_supported: list[str] | None = None
    id_token_signing_alg_values_supported: list[str] | None = None


# ------------------------------------------------------------- RFC 7591


class ClientMetadata(_Document):
    """RFC 7591 section 2: a registration request, or (with ``client_id``) a
    Client ID Metadata Document."""

    redirect_uris: list[str] | None = None
    token_endpoint_auth_method: str | None = None
    grant_types: list[str] | None = None
    response_types: list[str] | None = None
    client_name: str | None = None
    client_uri: str | None = None
    logo_uri: str | None = None
    scope: str | None = None
    contacts: list[str] | None = None
    tos_uri: str | None = None
    policy_uri: str | None = None
    jwks_uri: str | None = None
    jwks: dict[str, Any] | None = None
    software_id: str | None = None
    software_version: str | None = None
    token_endpoint_auth_signing_alg: str | None = None
    dpop_bound_access_tokens: bool | None = None
    application_type: str | None = None
    client_id: str | None = None


class ClientInformation(ClientMetadata):
    """RFC 7591 section 3.2.1: what the authorization server registered.

    ``client_id`` is required in a registration response (checked by
    :func:`decode`); a pre-registered client is described by one too.
    """

    client_secret: str | None = None
    client_id_issued_at: int | None = None
    client_secret_expires_at: int | None = None
    registration_access_token: str | None = None
    registration_client_uri: str | None = None


# ------------------------------------------------------------- RFC 6749


class TokenResponse(_Document):
    """RFC 6749 section 5.1 (also RFC 8693 token exchange answers)."""

    access_token: str
    token_type: str
    expires_in: int | float | None = None
    refresh_token: str | None = None
    scope: str | None = None
    id_token: str | None = None
    issued_token_type: str | None = None


class OAuthErrorResponse(_Document):
    """RFC 6749 section 5.2 (and RFC 7591 section 3.2.2 registration errors)."""

    error: str
    error_description: str | None = None
    error_uri: str | None = None


# ------------------------------------------------------------- codec

_D = TypeVar("_D", bound=_Document)
_encoder = msgspec.json.Encoder()


def encode(document: _Document) -> bytes:
    """The JSON of a document, without its unset fields."""
    return _encoder.encode(document)


def decode(data: bytes | str, kind: type[_D]) -> _D:
    """Parse a document; :class:`MetadataError` says why it is not one."""
    try:
        document = msgspec.json.decode(data, type=kind)
    except msgspec.ValidationError as exc:
        raise MetadataError(f"not a valid {kind.__name__}: {exc}") from None
    except msgspec.DecodeError as exc:
        raise MetadataError(f"{kind.__name__} is not JSON: {exc}") from None
    if isinstance(document, ClientInformation) and not document.client_id:
        raise MetadataError("not a valid ClientInformation: no client_id")
    return document


# ------------------------------------------------------------- URLs


def _split(url: str) -> urllib.parse.SplitResult:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise MetadataError(f"not an absolute http(s) URL: {url!r}")
    return parts


def _origin(parts: urllib.parse.SplitResult) -> str:
    return f"{parts.scheme}://{parts.netloc}"


def protected_resource_metadata_url(resource: str) -> str:
    """Where the RFC 9728 document of ``resource`` lives: the well-known path
    inserted between the origin and the resource's path (RFC 9728 section 3.1)."""
    parts = _split(resource)
    path = parts.path.rstrip("/")
    return f"{_origin(parts)}{PRM_WELL_KNOWN}{path}"


def protected_resource_metadata_urls(server_url: str) -> list[str]:
    """Where a client looks for the MCP server's RFC 9728 document when the
    challenge names none: path-suffixed first, then the origin's root."""
    parts = _split(server_url)
    root = f"{_origin(parts)}{PRM_WELL_KNOWN}"
    first = protected_resource_metadata_url(server_url)
    return [first] if first == root else [first, root]


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """Where the metadata of the authorization server ``issuer`` may be, in the
    order MCP (2025-11-25) gives.

    For an issuer with a path: OAuth path-insertion, OpenID Connect
    path-insertion, OpenID Connect path-appending.  Without a path: OAuth,
    then OpenID Connect, at the root.
    """
    parts = _split(issuer)
    origin = _origin(parts)
    path = parts.path.rstrip("/")
    if not path:
        return [origin + OAUTH_AS_WELL_KNOWN, origin + OIDC_WELL_KNOWN]
    return [
        f"{origin}{OAUTH_AS_WELL_KNOWN}{path}",
        f"{origin}{OIDC_WELL_KNOWN}{path}",
        f"{origin}{path}{OIDC_WELL_KNOWN}",
    ]


def canonical_resource(url: str) -> str:
    """RFC 8707 canonical form of a resource URI: lower-case scheme and host, no
    fragment, no default port, no trailing slash on an empty path."""
    parts = _split(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    default = 443 if scheme == "https" else 80
    netloc = host if port in (None, default) else f"{host}:{port}"
    path = parts.path
    if path == "/":
        path = ""
    query = f"?{parts.query}" if parts.query else ""
    return f"{scheme}://{netloc}{path}{query}"


def resource_matches(advertised: str, server_url: str) -> bool:
    """Whether protected resource metadata for ``advertised`` may be used for
    the MCP server at ``server_url``.

    Same origin, and the advertised path is the server's path or a prefix of
    it at a segment boundary (a resource may cover several endpoints).
    """
    try:
        a = canonical_resource(advertised)
        s = canonical_resource(server_url)
    except MetadataError:
        return False
    a_parts, s_parts = urllib.parse.urlsplit(a), urllib.parse.urlsplit(s)
    if (a_parts.scheme, a_parts.netloc) != (s_parts.scheme, s_parts.netloc):
        return False
    a_path = a_parts.path.rstrip("/")
    s_path = s_parts.path.rstrip("/")
    return s_path == a_path or s_path.startswith(a_path + "/")


# ------------------------------------------------------- WWW-Authenticate

_TOKEN68 = re.compile(r"\s*[A-Za-z0-9\-._~+/]+=*\s*(?=,|$)")
_PARAM = re.compile(r"""\s*([!#$%&'*+\-.^_`|~0-9A-Za-z]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]*)\s*""")
_SCHEME = re.compile(r"\s*([!#$%&'*+\-.^_`|~0-9A-Za-z]+)(?:\s+|$|(?=,))")


class Challenge(msgspec.Struct, frozen=True):
    """One challenge of a ``WWW-Authenticate`` header: its scheme (lower case)
    and its parameters (names lower case, quoted values unescaped)."""

    scheme: str
    params: dict[str, str]

    def get(self, name: str) -> str | None:
        return self.params.get(name)


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def parse_www_authenticate(header: str) -> list[Challenge]:
    """The challenges of a ``WWW-Authenticate`` value (RFC 9110 section 11.6.1).

    Lenient: what cannot be parsed ends the parse and what was read so far is
    returned, so a malformed header never raises.
    """
    challenges: list[Challenge] = []
    pos = 0
    text = header[:8192]
    while pos < len(text):
        while pos < len(text) and text[pos] in " ,\t":
            pos += 1
        m = _SCHEME.match(text, pos)
        if m is None:
            break
        scheme = m.group(1).lower()
        pos = m.end()
        params: dict[str, str] = {}
        t = _TOKEN68.match(text, pos)
        if t is not None:
            pos = t.end()  # a token68 credential-like value: no parameters
        while t is None and pos < len(text):
            p = _PARAM.match(text, pos)
            if p is None:
                break
            params.setdefault(p.group(1).lower(), _unquote(p.group(2)))
            pos = p.end()
            if pos < len(text) and text[pos] == ",":
                pos += 1
        challenges.append(Challenge(scheme, params))
    return challenges
