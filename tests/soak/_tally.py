"""What each attack of the soak test did and saw, and the server-side view of its connections."""

from __future__ import annotations

import socket
import statistics
import struct
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


class MachineTooBusy(UserWarning):
    """A soak run left the verdicts of some attacks out: the machine was too busy to run them at
    full rate. Shown in the warnings summary, not an error (pyproject.toml's filterwarnings)."""


# TCP states (include/net/tcp_states.h)
ESTABLISHED = 1

# The kernel's socket diagnostics (linux/sock_diag.h, linux/inet_diag.h): one socket looked up by
# its addresses, as ``ss`` does.  Reading /proc/net/tcp instead walks every socket of the host
# (thousands of TIME_WAIT ones during the attacks), about 15 ms of kernel time per read with the
# socket table's locks taken in turn: twice a second, it stalled the server's packets too.
_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST = 1
_NLMSG_ERROR = 2
_NO_COOKIE = 0xFFFFFFFF


def server_state(port: int, client: str, client_port: int) -> int | None:
    """The state of the server's TCP socket on ``port`` with peer ``client:client_port``
    (``ESTABLISHED`` while the server holds it open; a socket the server closed with unsent data
    stays in FIN_WAIT1 with no owner, which the client cannot see); None if there is none."""
    address = socket.inet_aton("127.0.0.1") + bytes(12), socket.inet_aton(client) + bytes(12)
    sockid = struct.pack("!HH", port, client_port) + address[0] + address[1]
    sockid += struct.pack("=III", 0, _NO_COOKIE, _NO_COOKIE)
    request = struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
    header = struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, 1, 0)
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as diag:
        diag.send(header + request)
        answer = diag.recv(65536)
    if struct.unpack_from("=H", answer, 4)[0] == _NLMSG_ERROR:
        return None
    state: int = answer[17]  # (after the 16-byte header: family, then state)
    return state
