"""The signed JWTs an OAuth client makes: ``private_key_jwt`` client assertions
(RFC 7523 section 2.2) and DPoP proofs (RFC 9449 section 4).

PyJWT (the ``auth`` extra) is imported when the first JWT is made, so clients
that need neither never load it.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
import urllib.parse
from typing import Any

from ._jose import require_jwt

__all__ = ["DPoPKey", "client_assertion"]

#: RFC 7523 section 2.2: the ``client_assertion_type`` of a JWT client assertion.
JWT_BEARER_ASSERTION = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ASSERTION_LIFETIME = 300  # seconds a client assertion is valid


def _require_jwt() -> Any:
    return require_jwt("signing JWTs (private_key_jwt, DPoP)")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def client_assertion(client_id: str, audience: str, private_key: Any, algorithm: str = "ES256") -> str:
    """A signed JWT that authenticates ``client_id`` to the authorization server
    ``audience`` (its issuer identifier): ``iss`` and ``sub`` are the client,
    with a fresh ``jti`` and a short lifetime, so it cannot be replayed later."""
    jwt = _require_jwt()
    now = int(time.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + ASSERTION_LIFETIME,
        "jti": secrets.token_urlsafe(16),
    }
    return str(jwt.encode(claims, private_key, algorithm=algorithm))


def _htu(url: str) -> str:
    """RFC 9449 section 4.2: the target URI without query and fragment."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


class DPoPKey:
    """A DPoP key pair (P-256, ES256) made for one client; it signs the proofs.

    The private key never leaves the process; the public half travels in
    every proof's ``jwk`` header and the server binds tokens to its
    thumbprint.
    """

    algorithm = "ES256"

    def __init__(self) -> None:
        _require_jwt()
        from cryptography.hazmat.primitives.asymmetric import ec

        self._key = ec.generate_private_key(ec.SECP256R1())
        numbers = self._key.public_key().public_numbers()
        self.jwk = {
            "kty": "EC",
            "crv": "P-256",
            "x": b64url(numbers.x.to_bytes(32, "big")),
            "y": b64url(numbers.y.to_bytes(32, "big")),
        }

    def proof(
        self, method: str, url: str, *, nonce: str | None = None, access_token: str | None = None
    ) -> str:
        """A fresh proof for one request (new ``jti`` each time); bound to the
        access token (``ath``) when one is presented with it."""
        jwt = _require_jwt()
        claims: dict[str, Any] = {
            "jti": secrets.token_urlsafe(16),
            "htm": method.upper(),
            "htu": _htu(url),
            "iat": int(time.time()),
        }
        if nonce is not None:
            claims["nonce"] = nonce
        if access_token is not None:
            claims["ath"] = b64url(hashlib.sha256(access_token.encode("ascii")).digest())
        headers = {"typ": "dpop+jwt", "jwk": self.jwk}
        return str(jwt.encode(claims, self._key, algorithm=self.algorithm, headers=headers))


def load_private_key(pem: str | bytes) -> Any:
    """A PEM private key (PKCS#8 or traditional) as a signing key."""
    _require_jwt()
    from cryptography.hazmat.primitives import serialization

    data = pem.encode() if isinstance(pem, str) else pem
    try:
        return serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not a usable PEM private key: {exc}") from None
