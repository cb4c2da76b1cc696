"""The signing keys of the example authorization server: the newest signs its
access tokens, all of them verify (and are published at ``/jwks``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._common import _jose, _SigningKey


class _KeyRing:
    """The key access tokens are signed with (``algorithm``), and the one before it while
    :meth:`rotate` keeps it."""

    def __init__(self, algorithm: str) -> None:
        self.algorithm = algorithm
        self.keys = [_SigningKey(algorithm)]

    @property
    def jwks(self) -> dict[str, Any]:
        """The public keys (JWK Set)."""
        return {"keys": [key.public_jwk for key in self.keys]}

    def rotate(self, *, keep_old: bool) -> str:
        """Sign with a new key from now on; the newest old one stays only with ``keep_old``.
        Returns the new key id."""
        key = _SigningKey(self.algorithm)
        self.keys = [key, *self.keys[:1]] if keep_old else [key]
        return key.kid

    def sign(self, claims: dict[str, Any]) -> str:
        return self.keys[0].sign(claims)

    def verify(self, token: str, issuer: Callable[[], str]) -> dict[str, Any] | None:
        """The claims of an unexpired token signed by one of these keys for ``issuer()``
        (asked once the token names one of them), with ``exp`` and ``jti``; else ``None``."""
        jwt = _jose()
        try:
            header = jwt.get_unverified_header(token)
            key = next((k for k in self.keys if k.kid == header.get("kid")), None)
            if key is None:
                return None
            claims: dict[str, Any] = jwt.decode(
                token,
                key.private_key.public_key(),
                algorithms=[key.algorithm],
                options={"verify_aud": False, "require": ["exp", "jti"]},
                issuer=issuer(),
            )
        except jwt.PyJWTError:
            return None
        return claims
