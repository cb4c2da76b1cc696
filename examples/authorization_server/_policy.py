"""What the example authorization server publishes and checks every request
against: its issuer and the URLs under it, the scopes and resources it grants,
the client authentication methods it accepts, and the form body of its POST
endpoints.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable, Sequence

from mcp_trio.auth import _metadata as md
from mcp_trio.auth._server_http import FormError, parse_form
from mcp_trio.transports.http.server import HttpRequest

from ._common import AUTH_METHODS, OAuthError

_SCOPE_TOKEN = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]+$")  # RFC 6749 3.3 scope-token


def _check_resource(uri: str) -> str | None:
    """Why ``uri`` is not an RFC 8707 resource indicator, or ``None``."""
    try:
        parts = urllib.parse.urlsplit(uri)
    except ValueError:
        return f"{uri!r} is not a URI"
    if not parts.scheme or "#" in uri:
        return f"{uri!r} must be an absolute URI without a fragment"
    return None


class _Policy:
    """The issuer (``None`` until :meth:`AuthorizationServer.serve` binds), the scopes and
    resources it grants, the client authentication methods it accepts, and the checks
    of what requests name against them."""

    def __init__(
        self,
        issuer: str | None,
        *,
        scopes_supported: Iterable[str] | None,
        default_scopes: Iterable[str],
        resources: Iterable[str] | None,
        default_resource: str | None,
        auth_methods: Iterable[str],
    ) -> None:
        self.auth_methods = list(auth_methods)
        unknown = [m for m in self.auth_methods if m not in AUTH_METHODS]
        if unknown or not self.auth_methods:
            raise ValueError(f"auth_methods must be some of {', '.join(AUTH_METHODS)}")
        self.issuer = issuer.rstrip("/") if issuer else None
        self.scopes_supported = list(scopes_supported) if scopes_supported is not None else None
        self.default_scopes = list(default_scopes)
        self.resources = list(resources) if resources is not None else None
        self.default_resource = default_resource

    def url(self, path: str) -> str:
        if self.issuer is None:
            raise RuntimeError("the authorization server has no issuer yet (serve() sets it)")
        return self.issuer + path

    def form(self, request: HttpRequest) -> dict[str, list[str]]:
        content_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        if content_type != "application/x-www-form-urlencoded":
            raise OAuthError("invalid_request", "the body must be application/x-www-form-urlencoded")
        try:
            return parse_form(request.body, repeatable=("resource",))
        except FormError as exc:
            raise OAuthError("invalid_request", str(exc)) from None

    def scopes(
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

    def client_default_scopes(self, client: md.ClientInformation) -> list[str]:
        return client.scope.split() if client.scope else list(self.default_scopes)

    def check_resources(self, resources: Sequence[str]) -> list[str]:
        for resource in resources:
            problem = _check_resource(resource)
            if problem is not None:
                raise OAuthError("invalid_target", problem)
            if self.resources is not None and resource not in self.resources:
                raise OAuthError("invalid_target", f"no tokens are issued for {resource!r}")
        return list(dict.fromkeys(resources))
