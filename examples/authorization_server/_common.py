"""What the parts of the example authorization server share: its constants, the
OAuth error every endpoint raises, the records of its state (signing keys,
authorization codes, grants), the forgetting of what expired and the loopback
test of redirect URIs.
"""

from __future__ import annotations

import re
import secrets
import time
import urllib.parse
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

from mcp_trio.auth._jose import require_jwt
from mcp_trio.auth._server_http import first

AUTH_METHODS = ("client_secret_basic", "client_secret_post", "none", "private_key_jwt")
GRANT_TYPES = ("authorization_code", "refresh_token", "client_credentials")
_LOOPBACK_HOSTS = ("127.0.0.1", "[::1]", "localhost")
_PKCE_VALUE = re.compile(r"^[A-Za-z0-9\-._~]{43,128}$")


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
        return str(_jose().encode(claims, self.private_key, algorithm=self.algorithm, headers=headers))


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


class _Forgetting:
    """Forgets what can no longer be used (expired codes, assertion ids and access tokens,
    refresh tokens of ended grants), so that memory follows the live state, not the server's
    age: each part that keeps such things adds its ``forget(now, wall)``; calling this runs
    them all, at most once a second."""

    def __init__(self) -> None:
        self._at = -1.0
        self._parts: list[Callable[[float, float], None]] = []

    def add(self, forget: Callable[[float, float], None]) -> None:
        """``forget(now, wall)``: ``time.monotonic()`` and ``time.time()``."""
        self._parts.append(forget)

    def __call__(self) -> None:
        now = time.monotonic()
        if now - self._at < 1.0:
            return
        self._at = now
        wall = time.time()
        for forget in self._parts:
            forget(now, wall)


_T = TypeVar("_T")


class _Moved(Generic[_T]):
    """A public attribute of :class:`AuthorizationServer` whose state moved to one of its
    collaborators (the attribute of the same name of ``part``): still read and set through
    the server, with a :class:`DeprecationWarning`, for one release."""

    def __init__(self, part: str) -> None:
        self.part = part
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def _warn(self) -> None:
        new = f"AuthorizationServer.{self.part}.{self.name}"
        warnings.warn(f"AuthorizationServer.{self.name} is deprecated: use {new}", DeprecationWarning, 3)

    @overload
    def __get__(self, obj: None, owner: type) -> _Moved[_T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> _T: ...
    def __get__(self, obj: object, owner: type | None = None) -> _T | _Moved[_T]:
        if obj is None:
            return self
        self._warn()
        value: _T = getattr(getattr(obj, self.part), self.name)
        return value

    def __set__(self, obj: object, value: _T) -> None:
        self._warn()
        setattr(getattr(obj, self.part), self.name, value)


def _is_loopback(parts: urllib.parse.SplitResult) -> bool:
    host = parts.netloc.rsplit(":", 1)[0] if not parts.netloc.endswith("]") else parts.netloc
    return parts.scheme == "http" and host.lower() in _LOOPBACK_HOSTS
