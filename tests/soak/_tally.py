"""What each attack of the soak test did and saw, and the server-side view of its connections."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field


@dataclass
class Stats:
    """One attack's counters: ``counts`` by outcome, connections or streams held now and at most,
    and how long each one the server ended had been held."""

    name: str
    source: str
    counts: Counter[str] = field(default_factory=Counter)
    held: int = 0
    held_max: int = 0
    ended_after: list[float] = field(default_factory=list)

    def add(self, key: str, n: int = 1) -> None:
        self.counts[key] += n

    def hold(self) -> None:
        self.held += 1
        self.held_max = max(self.held_max, self.held)

    def release(self) -> None:
        self.held -= 1

    def ended(self, seconds: float, how: str = "ended by the server") -> None:
        """The server ended a connection or stream we still held, after ``seconds``."""
        self.ended_after.append(seconds)
        self.add(how)

    def summary(self) -> str:
        parts = [f"{key} {value}" for key, value in sorted(self.counts.items())]
        if self.held_max:
            parts.append(f"held at most {self.held_max} at once")
        if self.ended_after:
            median = statistics.median(self.ended_after)
            parts.append(
                f"server ended {len(self.ended_after)} after {median:.1f} s "
                f"(median; min {min(self.ended_after):.1f}, max {max(self.ended_after):.1f})"
            )
        return "; ".join(parts) or "nothing"


@dataclass
class Attack:
    """An attack: what it does, how to run it (until cancelled), whether it really ran, and what
    its counters say about the bound it meets (None when the bound was seen)."""

    name: str
    does: str
    run: Callable[[int, Stats], Awaitable[None]]
    ran: Callable[[Stats], bool]
    unbounded: Callable[[Stats], str | None]


# /proc/net/tcp states (include/net/tcp_states.h)
ESTABLISHED = "01"


def _hex(ip: str) -> str:
    """An IPv4 address as /proc/net/tcp writes it (the bytes of the address, little-endian)."""
    return bytes(int(octet) for octet in ip.split("."))[::-1].hex().upper()


def server_side(port: int, client: str) -> dict[int, str]:
    """The state of each of the server's TCP sockets on ``port`` with peer ``client``, by the peer's
    port (``ESTABLISHED`` while the server holds it open; a socket the server closed with unsent
    data stays in FIN_WAIT1 with no owner, which the client cannot see)."""
    local = f"{_hex('127.0.0.1')}:{port:04X}"
    remote = _hex(client) + ":"
    found: dict[int, str] = {}
    with open("/proc/net/tcp") as table:
        for line in table:
            if local in line and remote in line:
                fields = line.split()
                if fields[1] == local and fields[2].startswith(remote):
                    found[int(fields[2].split(":")[1], 16)] = fields[3]
    return found
