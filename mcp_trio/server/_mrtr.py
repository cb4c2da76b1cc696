"""Multi-round-trip requests (2026-07-28): the server's side, without I/O.

From 2026-07-28 on a server never sends a request to the client.  A handler
that needs sampling, elicitation or roots instead ends the round with an
``InputRequiredResult``; the client answers the ``inputRequests`` and retries
the original request with ``inputResponses`` and the ``requestState`` it was
given.  This module lets one handler body serve both eras by *replaying* it:

* Each input a handler asks for gets a key derived from what is asked (the
  method and a digest of its params, plus a counter for repeats), so the key
  does not depend on task scheduling.  A handler may name the key itself
  (``input_key=``); a name used again in the same run gets a counter suffix.
* If the answer is known (from this retry's ``inputResponses``, or carried
  over in the request state from earlier rounds), the call returns it at once.
  Otherwise it raises :class:`InputRequired`, which unwinds the handler; the
  server answers with every input requested so far in this round.
* The request state is a signed (HMAC-SHA256) token holding the method, a
  digest of the original params, an expiry, the key requested in the last
  round and the answers collected so far.  A state that fails verification,
  has expired, or belongs to another request is rejected with -32602.

Consequence for handler authors: in the stateless era the code before an
input call runs again on each round, so it should not have side effects that
must happen once (or must guard them itself).

A tool that gathers input this way and then becomes a task (Tasks extension)
is replayed once more inside the task, by an :class:`InputSession` made with
:meth:`InputSession.replaying`: the answers of the rounds before the task are
returned again, and an input asked for the first time inside the task is not
the session's business (it becomes one of the task's ``inputRequests``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Mapping
from typing import Any

import msgspec

from .. import _jsonrpc as rpc
from .._exceptions import McpError

__all__ = ["MISSING", "InputRequired", "InputSession", "StateCodec", "input_key", "params_digest"]

_STATE_VERSION = 1
_IGNORED_PARAMS = frozenset({"_meta", "meta", "inputResponses", "requestState"})


class InputRequired(BaseException):
    """Raised inside a handler to end the round with ``InputRequiredResult``.

    A ``BaseException`` (like trio's ``Cancelled``) so that a handler's
    ``except Exception`` does not swallow it by accident.
    """

    def __init__(self, requests: Mapping[str, dict[str, Any]]) -> None:
        super().__init__(f"input required: {', '.join(requests)}")
        self.requests = dict(requests)


def params_digest(method: str, params: Any) -> str:
    """A digest of the params that define a request (not its MRTR fields or ``_meta``)."""
    if isinstance(params, msgspec.Struct):
        params = msgspec.to_builtins(params)
    if isinstance(params, dict):
        params = {k: v for k, v in params.items() if k not in _IGNORED_PARAMS}
    body = msgspec.json.encode([method, params], order="sorted")
    return hashlib.sha256(body).hexdigest()[:32]


def input_key(method: str, params: Any, occurrence: int) -> str:
    """The ``inputRequests`` key of the ``occurrence``-th identical input."""
    body = msgspec.json.encode([method, params], order="sorted")
    return f"{method.replace('/', '.')}-{hashlib.sha256(body).hexdigest()[:16]}-{occurrence}"


class StateCodec:
    """Signs and verifies request state.

    Args:
        key: The HMAC key.  Servers that share load (several processes behind
            one endpoint) must share it; by default each codec draws its own.
        ttl: Seconds a request state stays valid.
    """

    def __init__(self, key: bytes | None = None, ttl: float = 600.0) -> None:
        if key is not None and len(key) < 16:
            raise ValueError("the request state key must be at least 16 bytes")
        self._key = key if key is not None else secrets.token_bytes(32)
        self.ttl = ttl

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._key, payload, hashlib.sha256).digest()

    def sign(self, state: dict[str, Any]) -> str:
        payload = msgspec.json.encode(state)
        return f"{_b64(payload)}.{_b64(self._mac(payload))}"

    def verify(self, token: str, *, method: str, digest: str, principal: str | None) -> dict[str, Any]:
        """The state inside ``token``, or -32602 if it is not ours, expired or misplaced."""
        try:
            payload_text, mac_text = token.split(".", 1)
            payload = _unb64(payload_text)
            mac = _unb64(mac_text)
        except (ValueError, AttributeError):
            raise _bad_state("malformed") from None
        if not hmac.compare_digest(mac, self._mac(payload)):
            raise _bad_state("signature does not verify")
        try:
            state = msgspec.json.decode(payload)
        except msgspec.DecodeError:
            raise _bad_state("malformed") from None
        if not isinstance(state, dict) or state.get("v") != _STATE_VERSION:
            raise _bad_state("unknown format")
        if state.get("m") != method or state.get("d") != digest:
            raise _bad_state("it was issued for another request")
        if state.get("p") != principal:
            raise _bad_state("it was issued to another principal")
        expires = state.get("e")
        if not isinstance(expires, int | float) or time.time() > expires:
            raise _bad_state("expired")
        return state

    def new_state(
        self,
        *,
        method: str,
        digest: str,
        principal: str | None,
        answers: dict[str, Any],
        asked: list[str],
    ) -> dict[str, Any]:
        return {
            "v": _STATE_VERSION,
            "m": method,
            "d": digest,
            "p": principal,
            "e": int(time.time() + self.ttl) + 1,
            "a": answers,
            "k": asked,
        }


def _bad_state(why: str) -> McpError:
    return McpError(rpc.INVALID_PARAMS, f"Invalid requestState: {why}")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class InputSession:
    """The inputs of one round of one request: what is answered, what is asked."""

    def __init__(
        self,
        codec: StateCodec,
        *,
        method: str,
        params: Any,
        principal: str | None = None,
    ) -> None:
        self.codec = codec
        self.method = method
        self.principal = principal
        self.digest = params_digest(method, params)
        self.answers: dict[str, Any] = {}
        self.asked: dict[str, dict[str, Any]] = {}
        #: Only replays known answers (inside a task); never ends a round.
        self.replay = False
        self._seen: dict[str, int] = {}
        self._issued: set[str] = set()  # keys handed out in this run (never twice)
        token = _field(params, "requestState")
        responses = _field(params, "inputResponses")
        if token is not None:
            state = codec.verify(token, method=method, digest=self.digest, principal=principal)
            self.answers.update(state.get("a") or {})
            if isinstance(responses, dict):
                for key in state.get("k") or ():
                    if key in responses:
                        self.answers[key] = responses[key]
        # Without a state there is nothing the server asked for, so any
        # inputResponses are unsolicited and ignored.

    @classmethod
    def replaying(cls, codec: StateCodec, answers: Mapping[str, Any]) -> InputSession:
        """A session that answers from ``answers`` (collected by earlier
        rounds of the same request) and asks for nothing."""
        inputs = cls(codec, method="", params=None)
        inputs.answers.update(answers)
        inputs.replay = True
        return inputs

    def key_for(self, method: str, params: dict[str, Any], explicit: str | None = None) -> str:
        """The key of the next input: ``explicit`` (the handler's name for
        it) or one derived from the request, with a counter for repeats."""
        if explicit is not None:
            if not isinstance(explicit, str) or not explicit:
                raise ValueError("an input key must be a non-empty string")
            base = explicit
        else:
            base = input_key(method, params, 0)
        n = self._seen.get(base, 0)
        while True:
            if n == 0:
                key = base
            else:
                key = f"{explicit}-{n}" if explicit is not None else input_key(method, params, n)
            n += 1
            if key not in self._issued:
                break
        self._seen[base] = n
        self._issued.add(key)
        return key

    def lookup(self, key: str) -> Any:
        return self.answers.get(key, MISSING)

    def ask(self, key: str, method: str, params: dict[str, Any]) -> InputRequired:
        self.asked[key] = {"method": method, "params": params}
        return InputRequired(self.asked)

    def result(self) -> dict[str, Any]:
        """The ``InputRequiredResult`` that ends this round (every input asked in it)."""
        state = self.codec.new_state(
            method=self.method,
            digest=self.digest,
            principal=self.principal,
            answers=self.answers,
            asked=list(self.asked),
        )
        return {
            "resultType": "input_required",
            "inputRequests": dict(self.asked),
            "requestState": self.codec.sign(state),
        }


MISSING: Any = object()  # what ``lookup`` returns for an unanswered input


def _field(params: Any, name: str) -> Any:
    if isinstance(params, dict):
        value = params.get(name)
    else:
        value = getattr(params, name, None)
    return None if value is msgspec.UNSET else value
