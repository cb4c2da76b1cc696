"""Token verification for the resource server: :class:`AccessToken`, the
:class:`TokenVerifier` protocol and its errors, and the verifiers.

Rules:

* :class:`JWTVerifier` accepts only the pinned asymmetric algorithms (never
  ``none`` nor HMAC), requires ``exp``, and fetches keys at most once per
  ``refresh_interval`` for an unknown ``kid`` (and after ``max_age``).
* :class:`IntrospectionVerifier` (RFC 7662) keeps no token, only its hash,
  and reuses an answer at most ``cache_ttl`` seconds and never past expiry.
* A verifier that cannot reach its authorization server raises
  :class:`VerifierUnavailable` (a 503), never :class:`InvalidToken` (a 401).
"""

from __future__ import annotations

import base64
import hashlib
import inspect
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import trio

from ..transports.http.client._http11 import Failure
from . import _metadata as md
from ._client_http import OAuthHttp
from ._jose import require_jwt

#: Asymmetric algorithms accepted by default (never ``none`` nor HMAC: the
#: resource server holds no shared secret with the authorization server).
DEFAULT_ALGORITHMS = ("RS256", "ES256")


# ------------------------------------------------------------------ tokens


@dataclass(frozen=True)
class AccessToken:
    """A verified access token, as handlers see it (``ctx.auth``).

    Attributes:
        subject: ``sub``: whom the token speaks for (a user, or the client itself).
        client_id: The OAuth client the token was issued to.
        scopes: The scopes it grants.
        audience: Whom it was issued for (``aud``, RFC 8707 resources).
        expires_at: Expiry (seconds since the epoch), if it has one.
        issuer: ``iss``, when known.
        claims: Everything the verifier learnt (JWT claims, introspection answer).
    """

    subject: str | None = None
    client_id: str | None = None
    scopes: frozenset[str] = frozenset()
    audience: tuple[str, ...] = ()
    expires_at: float | None = None
    issuer: str | None = None
    claims: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_claims(cls, claims: Mapping[str, Any]) -> AccessToken:
        """Read the usual JWT / RFC 7662 fields (``scope`` as a space-separated
        string, or ``scp`` as a list; ``client_id``, else ``azp``)."""
        scope = claims.get("scope")
        if isinstance(scope, str):
            scopes = frozenset(scope.split())
        elif isinstance(claims.get("scp"), list):
            scopes = frozenset(str(s) for s in claims["scp"])
        else:
            scopes = frozenset()
        aud = claims.get("aud")
        audience = (
            (aud,) if isinstance(aud, str) else tuple(str(a) for a in aud) if isinstance(aud, list) else ()
        )
        exp = claims.get("exp")
        client_id = claims.get("client_id", claims.get("azp"))
        return cls(
            subject=_str_or_none(claims.get("sub")),
            client_id=_str_or_none(client_id),
            scopes=scopes,
            audience=audience,
            expires_at=float(exp) if isinstance(exp, int | float) and not isinstance(exp, bool) else None,
            issuer=_str_or_none(claims.get("iss")),
            claims=dict(claims),
        )


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class InvalidToken(Exception):
    """The token is not acceptable (401 ``invalid_token``); the message says why."""


class VerifierUnavailable(Exception):
    """The token could not be checked now (the authorization server is unreachable): 503."""


class TokenVerifier(Protocol):
    """Checks a bearer token: its :class:`AccessToken`, or :class:`InvalidToken`.

    Expiry and audience are checked again by :class:`ResourceServer` on what
    it returns, so a verifier need only report them."""

    async def verify(self, token: str) -> AccessToken: ...


class CallbackVerifier:
    """A verifier from your own function: ``fn(token)`` (sync or async)
    returns an :class:`AccessToken`, a claims mapping, or ``None`` to refuse."""

    def __init__(self, fn: Callable[[str], Any]) -> None:
        self.fn = fn

    async def verify(self, token: str) -> AccessToken:
        result = self.fn(token)
        if inspect.isawaitable(result):
            result = await result
        if result is None:
            raise InvalidToken("the token is not valid")
        if isinstance(result, AccessToken):
            return result
        if isinstance(result, Mapping):
            return AccessToken.from_claims(result)
        raise TypeError("a verifier callback returns an AccessToken, a claims mapping or None")


# ------------------------------------------------------------------ JWT


def _jose() -> Any:
    return require_jwt("verifying JWT access tokens")


class JWTVerifier:
    """JWT access tokens (RFC 9068) signed by the authorization server.

    Args:
        jwks_url: Where the signing keys are (fetched with the project's HTTP
            client, cached).  ``None``: given as ``keys``, or else found in
            the ``jwks_uri`` of the ``issuer``'s RFC 8414 metadata.
        issuer: The required ``iss``; ``None`` skips the check.
        algorithms: The only ``alg`` values accepted (pinned; default RS256, ES256).
        keys: A JWK Set to use instead of (or before fetching) ``jwks_url``.
        leeway: Seconds of clock skew allowed on ``exp`` / ``nbf`` / ``iat``.
        refresh_interval: A token signed by an unknown ``kid`` makes the keys
            be fetched again (the server may have rotated them), but at most
            once per this many seconds, so junk tokens cannot make us hammer
            the authorization server.
        max_age: Keys are fetched again on use after this many seconds.
        token_types: The ``typ`` header values accepted (RFC 9068 asks for
            ``("at+jwt", "application/at+jwt")``); ``None`` (the default)
            accepts any, as many authorization servers write ``JWT``.
        http: The HTTP client (timeouts, size limit, TLS).
    """

    def __init__(
        self,
        jwks_url: str | None = None,
        *,
        issuer: str | None = None,
        algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
        keys: Mapping[str, Any] | None = None,
        leeway: float = 0.0,
        refresh_interval: float = 30.0,
        max_age: float = 3600.0,
        token_types: Sequence[str] | None = None,
        http: OAuthHttp | None = None,
    ) -> None:
        if jwks_url is None and keys is None and issuer is None:
            raise ValueError("give jwks_url, keys or issuer")
        unsafe = [a for a in algorithms if a == "none" or a.startswith("HS")]
        if unsafe:
            raise ValueError(f"algorithm {unsafe[0]!r} cannot verify tokens from another party")
        self.jwks_url = jwks_url
        self.issuer = issuer
        self.algorithms = list(algorithms)
        self.leeway = leeway
        self.refresh_interval = refresh_interval
        self.max_age = max_age
        self.token_types = [t.lower() for t in token_types] if token_types is not None else None
        self.http = http or OAuthHttp(timeout=10.0, max_size=256 * 1024)
        self._keys: dict[str | None, list[dict[str, Any]]] = {}
        self._fetched_at: float | None = None
        self._forced_at: float | None = None
        self._lock = trio.Lock()
        self.fetches = 0  # how many times the keys were fetched
        self._discover = jwks_url is None and keys is None
        if keys is not None:
            self._load(keys)

    def _load(self, jwks: Mapping[str, Any]) -> None:
        """Keep the signing keys of a JWK Set, by ``kid`` (parsed when used,
        for the algorithm the token names)."""
        entries = jwks.get("keys")
        if not isinstance(entries, list):
            raise VerifierUnavailable("the JWK Set has no 'keys' list")
        table: dict[str | None, list[dict[str, Any]]] = {}
        for entry in entries:
            if isinstance(entry, dict) and entry.get("use", "sig") == "sig":
                kid = entry.get("kid")
                table.setdefault(kid if isinstance(kid, str) else None, []).append(entry)
        self._keys = table

    async def _refresh(self, *, forced: bool) -> None:
        """Fetch the keys when they are older than ``max_age``, or (``forced``:
        a token names an unknown key) at most once per ``refresh_interval``;
        one task at a time."""
        if self.jwks_url is None and not self._discover:
            return
        async with self._lock:
            now = trio.current_time()
            if forced:
                if self._forced_at is not None and now - self._forced_at < self.refresh_interval:
                    return
                self._forced_at = now
            elif self._fetched_at is not None and now - self._fetched_at < self.max_age:
                return
            self._fetched_at = now
            self.fetches += 1
            if self.jwks_url is None:
                self.jwks_url = await self._find_jwks_url()
            try:
                reply = await self.http.get(self.jwks_url, follow=0)
            except Failure as exc:
                raise VerifierUnavailable(f"cannot fetch the signing keys: {exc.message}") from None
            document = reply.json() if reply.ok else None
            if not isinstance(document, dict):
                raise VerifierUnavailable(
                    f"the signing keys at {self.jwks_url} are unusable (HTTP {reply.status})"
                )
            self._load(document)

    async def _find_jwks_url(self) -> str:
        """The ``jwks_uri`` of the issuer's metadata (RFC 8414 3, OpenID discovery)."""
        assert self.issuer is not None
        for url in md.authorization_server_metadata_urls(self.issuer):
            try:
                reply = await self.http.get(url, follow=0)
            except Failure as exc:
                raise VerifierUnavailable(f"cannot fetch {url}: {exc.message}") from None
            if reply.status != 200:
                continue
            try:
                metadata = md.decode(reply.body, md.AuthorizationServerMetadata)
            except md.MetadataError:
                continue
            if metadata.issuer == self.issuer and metadata.jwks_uri:
                return metadata.jwks_uri
        raise VerifierUnavailable(f"no metadata with a jwks_uri found for issuer {self.issuer}")

    def _usable(self, kid: str | None, algorithm: str) -> list[Any]:
        """The keys that may have signed a token with this ``kid`` and ``alg``
        (every key when the token names no ``kid``)."""
        jwt = _jose()
        entries = (
            self._keys.get(kid, []) if kid is not None else [e for es in self._keys.values() for e in es]
        )
        keys = []
        for entry in entries:
            if entry.get("alg", algorithm) != algorithm:
                continue
            try:
                keys.append(jwt.PyJWK(entry, algorithm=algorithm))
            except (jwt.PyJWTError, ValueError, TypeError, KeyError):
                continue  # a key of another type, or one we cannot read
        return keys

    async def _keys_for(self, kid: str | None, algorithm: str) -> list[Any]:
        await self._refresh(forced=False)
        keys = self._usable(kid, algorithm)
        if not keys:
            await self._refresh(forced=True)  # rotation: the key may be new (bounded)
            keys = self._usable(kid, algorithm)
        if not keys:
            raise InvalidToken(f"the token is signed with an unknown key ({kid!r})")
        return keys

    async def verify(self, token: str) -> AccessToken:
        jwt = _jose()
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise InvalidToken("the token is not a JWT") from None
        algorithm = header.get("alg")
        if algorithm not in self.algorithms:
            raise InvalidToken(f"the token's algorithm {algorithm!r} is not accepted")
        kind = header.get("typ")
        if self.token_types is not None and str(kind).lower() not in self.token_types:
            raise InvalidToken(f"the token's type {kind!r} is not an access token type")
        kid = header.get("kid")
        keys = await self._keys_for(kid if isinstance(kid, str) else None, algorithm)
        claims: dict[str, Any] | None = None
        for key in keys:
            try:
                claims = jwt.decode(
                    token,
                    key.key,
                    algorithms=[algorithm],
                    issuer=self.issuer,
                    leeway=self.leeway,
                    options={"require": ["exp"], "verify_aud": False},
                )
                break
            except jwt.InvalidSignatureError:
                continue
            except jwt.ExpiredSignatureError:
                raise InvalidToken("the token has expired") from None
            except jwt.PyJWTError as exc:
                raise InvalidToken(f"the token was refused: {exc}") from None
        if claims is None:
            raise InvalidToken("the token's signature does not verify")
        token_info = AccessToken.from_claims(claims)
        if token_info.expires_at is not None and self.leeway:
            token_info = replace(token_info, expires_at=token_info.expires_at + self.leeway)
        return token_info


# ------------------------------------------------------------- introspection


class IntrospectionVerifier:
    """Opaque (or any) tokens checked with the authorization server's RFC 7662
    introspection endpoint.

    Args:
        url: The introspection endpoint.
        client_id, client_secret: The resource server's own credentials.
        auth_method: ``client_secret_basic`` (default) or ``client_secret_post``.
        cache_ttl: Seconds an active answer is reused (never past the token's
            expiry); 0 asks every time, so revocation takes effect at once.
        cache_size: Answers kept at most.
        http: The HTTP client.
    """

    def __init__(
        self,
        url: str,
        *,
        client_id: str,
        client_secret: str,
        auth_method: str = "client_secret_basic",
        cache_ttl: float = 0.0,
        cache_size: int = 1024,
        http: OAuthHttp | None = None,
    ) -> None:
        if auth_method not in ("client_secret_basic", "client_secret_post"):
            raise ValueError("auth_method must be client_secret_basic or client_secret_post")
        self.url = url
        self.client_id = client_id
        self.client_secret = client_secret
        self.auth_method = auth_method
        self.cache_ttl = cache_ttl
        self.cache_size = cache_size
        self.http = http or OAuthHttp(timeout=10.0, max_size=256 * 1024)
        self._cache: OrderedDict[str, tuple[float, AccessToken]] = OrderedDict()
        self.requests = 0  # introspection requests made

    def _credentials(self, form: dict[str, str]) -> dict[str, str]:
        if self.auth_method == "client_secret_post":
            form.update(client_id=self.client_id, client_secret=self.client_secret)
            return {}
        quote = urllib.parse.quote_plus
        pair = f"{quote(self.client_id)}:{quote(self.client_secret)}"
        return {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode("ascii")}

    async def verify(self, token: str) -> AccessToken:
        key = hashlib.sha256(token.encode()).hexdigest()  # tokens themselves are not kept
        cached = self._cache.get(key)
        now = time.time()
        if cached is not None and cached[0] > now:
            return cached[1]
        self._cache.pop(key, None)
        form = {"token": token, "token_type_hint": "access_token"}
        headers = self._credentials(form)
        self.requests += 1
        try:
            reply = await self.http.request("POST", self.url, headers=headers, form=form)
        except Failure as exc:
            raise VerifierUnavailable(f"cannot reach the introspection endpoint: {exc.message}") from None
        answer = reply.json()
        if reply.status != 200 or not isinstance(answer, dict) or not isinstance(answer.get("active"), bool):
            raise VerifierUnavailable(
                f"the introspection endpoint answered HTTP {reply.status} without a verdict"
            )
        if not answer["active"]:
            raise InvalidToken("the token is not active")
        if answer.get("token_type") not in (None, "Bearer", "bearer", "access_token"):
            raise InvalidToken("the token is not an access token")
        info = AccessToken.from_claims(answer)
        if self.cache_ttl > 0:
            until = min(now + self.cache_ttl, info.expires_at or float("inf"))
            self._cache[key] = (until, info)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return info
