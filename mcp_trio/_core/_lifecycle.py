"""Session lifecycle: a transition table and the rules it encodes.

Rules (both roles; "legacy" = revisions 2024-11-05 ... 2025-11-25 with the
``initialize`` handshake, "modern" = 2026-07-28 and later, stateless):

1. A session starts in NEW.  Its era is not known yet.
2. Legacy, server side: the first request must be ``initialize`` (``ping`` is
   also allowed).  Any other request gets -32600.  Answering ``initialize``
   moves to INITIALIZING; ``notifications/initialized`` moves to READY.
   Requests are served from INITIALIZING on (the client may send them once
   it has our answer).  The server sends no request but ``ping`` before READY.
   A second ``initialize`` gets -32600.
3. Legacy, client side: sending ``initialize`` moves to INITIALIZING; a valid
   result whose version we accept moves to READY (the client then sends
   ``notifications/initialized``).  Before READY the client sends nothing but
   ``initialize`` and ``ping``, and accepts only ``ping`` from the server.
4. Modern, server side: a request whose ``_meta`` names a protocol version is
   a modern request; if the version is supported, the session is MODERN and
   every request stands alone.  A modern request is valid in NEW and MODERN.
5. Modern, client side: the driver calls ``use_modern(version)`` (after a
   ``server/discover`` probe, or directly), which moves NEW to MODERN.  A probe
   that shows a legacy server is undone with ``reset_era()``.
6. Legacy without a handshake, server side: a transport that keeps no
   sessions (stateless Streamable HTTP) serves each request on a fresh session
   that ``assume_initialized(version)`` moves from NEW to READY; the client's
   capabilities are unknown there, so the server sends it no requests.
7. Restored, server side: a session whose handshake another process
   answered (a session shared through a store) is moved by ``restore`` from
   NEW to READY with the negotiated version and the client's declared info
   and capabilities.
8. CLOSED is final: nothing is sent or accepted.
"""

from __future__ import annotations

import enum
from typing import Final

__all__ = ["State", "TRANSITIONS", "LifecycleError", "transition"]


class State(enum.Enum):
    NEW = "new"
    INITIALIZING = "initializing"
    READY = "ready"
    MODERN = "modern"
    CLOSED = "closed"


class LifecycleError(Exception):
    pass


# (role, state, event) -> new state
TRANSITIONS: Final[dict[tuple[str, State, str], State]] = {
    ("server", State.NEW, "initialize_answered"): State.INITIALIZING,
    ("server", State.INITIALIZING, "initialized_received"): State.READY,
    ("server", State.NEW, "modern_request"): State.MODERN,
    ("server", State.NEW, "assume_initialized"): State.READY,
    ("server", State.NEW, "restore"): State.READY,
    ("server", State.MODERN, "modern_request"): State.MODERN,
    # A dual-era client may probe with a modern request and then fall back.
    ("server", State.MODERN, "initialize_answered"): State.INITIALIZING,
    ("client", State.NEW, "initialize_sent"): State.INITIALIZING,
    ("client", State.INITIALIZING, "initialize_accepted"): State.READY,
    ("client", State.INITIALIZING, "initialize_failed"): State.NEW,
    ("client", State.NEW, "use_modern"): State.MODERN,
    ("client", State.MODERN, "reset_era"): State.NEW,
}


def transition(role: str, state: State, event: str) -> State:
    if event == "close":
        return State.CLOSED
    try:
        return TRANSITIONS[(role, state, event)]
    except KeyError:
        raise LifecycleError(f"{role}: {event!r} is not allowed in state {state.value}") from None
