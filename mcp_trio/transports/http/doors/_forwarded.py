"""The client's address behind trusted reverse proxies (``serve_http(forwarded_allow_ips=...)``,
``mcp-trio serve --forwarded-allow-ips``).

Behind a reverse proxy every request comes from the proxy's address, so the per-client bounds
(sessions and streams per address, the session table's choice of whom to end) would give all
clients one budget.  A proxy says whom it forwards for in ``Forwarded`` (RFC 7239, its ``for=``
parameters) or ``X-Forwarded-For``; each proxy on the way appends the address it received the
request from.  Those headers are believed only from a peer listed as a trusted proxy (anyone
else could write them), and then only up to the first address that is not a trusted proxy,
read from the right: that is the address the last trusted proxy saw, whatever a client wrote
further left.  ``Forwarded`` wins over ``X-Forwarded-For`` when both came.  A value that is not
an IP address (``unknown``, an obfuscated identifier, garbage) leaves the request the peer's
address: such clients share the proxy's budget, as without this setting, rather than picking
one of their own.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

__all__ = ["TrustedProxies"]

_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class TrustedProxies:
    """The proxies whose ``Forwarded`` / ``X-Forwarded-For`` are believed: IP addresses or
    networks (``10.0.0.0/8``), or ``*`` for every peer (only where nothing but the proxy can
    reach the server)."""

    def __init__(self, allowed: str | Iterable[str]) -> None:
        entries = [allowed] if isinstance(allowed, str) else list(allowed)
        items = [part.strip() for entry in entries for part in entry.split(",") if part.strip()]
        if not items:
            raise ValueError("forwarded_allow_ips names no address: give IPs, networks or '*'")
        self.everyone = "*" in items
        self.networks: list[_Network] = []
        for item in items:
            if item == "*":
                continue
            try:
                self.networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                raise ValueError(
                    f"forwarded_allow_ips: {item!r} is not an IP address or network (or '*')"
                ) from None

    def trusts(self, address: str) -> bool:
        if self.everyone:
            return True
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self.networks)

    def client_of(self, peer: str | None, headers: dict[str, str]) -> str | None:
        """The client's address for a request from ``peer`` with ``headers``."""
        if peer is None or not self.trusts(peer):
            return peer
        forwarded = headers.get("forwarded")
        hops = _forwarded_for(forwarded) if forwarded is not None else None
        if hops is None:
            listed = headers.get("x-forwarded-for")
            hops = [hop.strip() for hop in listed.split(",")] if listed is not None else []
        for hop in reversed(hops):
            address = _address(hop)
            if address is None:
                return peer  # (not an address: the proxy's budget)
            if not self.trusts(address):
                return address
        first = _address(hops[0]) if hops else None
        return first or peer  # every hop a trusted proxy: the farthest one


def _forwarded_for(value: str) -> list[str]:
    """The ``for=`` values of a ``Forwarded`` header, in order (quotes removed)."""
    hops: list[str] = []
    for element in value.split(","):
        for pair in element.split(";"):
            name, _, given = pair.strip().partition("=")
            if name.strip().lower() == "for":
                hops.append(given.strip().strip('"'))
    return hops


def _address(hop: str) -> str | None:
    """The IP address in one hop (``1.2.3.4``, ``1.2.3.4:5678``, ``[2001:db8::1]:80``,
    ``2001:db8::1``), normalised; None when it is not one."""
    text = hop.strip()
    if text.startswith("["):
        text = text[1 : text.find("]")] if "]" in text else ""
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None
