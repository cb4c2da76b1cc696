"""The PROXY protocol (HAProxy's, versions 1 and 2), sans-IO: the header a TCP load balancer
sends first on each connection it opens to the server, naming the client it forwards.

A lean door given ``proxy_protocol_allow_ips`` expects it from those peers (and only from
them: anyone else could claim any address) before the first request; the connection's client
address is then the one the header names, for per-client limits, rate limits and the access
log.  ``LOCAL`` (version 2, the balancer's own health check) and ``UNKNOWN`` (version 1) keep
the peer's address.  A header that is missing, malformed or too long ends the connection.

Version 1 is one text line: ``PROXY TCP4 203.0.113.7 10.0.0.2 51234 443\\r\\n`` (at most 107
bytes).  Version 2 is binary: a 12-byte signature, the version and command, the family, the
length of what follows, the addresses and ports, then optional TLVs (skipped).
"""

from __future__ import annotations

import ipaddress
from typing import NamedTuple

__all__ = ["MAX_HEADER", "ProxyHeader", "ProxyProtocolError", "parse_proxy_header"]

V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"
_V1_PREFIX = b"PROXY "
_V1_MAX = 107  # the longest version 1 line, CRLF included
_V2_FIXED = 16  # the signature, version and command, family, length
_V2_MAX_BODY = 4096  # addresses and TLVs: far more than any balancer sends
#: Bytes a header may take at most (with its TLVs).
MAX_HEADER = _V2_FIXED + _V2_MAX_BODY


class ProxyProtocolError(ValueError):
    """What arrived first is not a PROXY protocol header (or not one this door takes)."""


class ProxyHeader(NamedTuple):
    """A whole header: the client's address (None: keep the peer's) and its length in bytes."""

    client: str | None
    length: int


def parse_proxy_header(data: bytes) -> ProxyHeader | None:
    """The header at the start of ``data``; None while more bytes are needed to tell."""
    if data[:1] == b"\r":
        return _parse_v2(data)
    prefix = data[: len(_V1_PREFIX)]
    if prefix != _V1_PREFIX[: len(prefix)]:
        raise ProxyProtocolError("the connection did not start with a PROXY protocol header")
    return _parse_v1(data)


def _parse_v1(data: bytes) -> ProxyHeader | None:
    end = data.find(b"\r\n", 0, _V1_MAX)
    if end < 0:
        if len(data) >= _V1_MAX:
            raise ProxyProtocolError("PROXY protocol v1 line longer than 107 bytes")
        return None
    fields = data[:end].decode("ascii", "replace").split(" ")
    if len(fields) >= 2 and fields[1] == "UNKNOWN":
        return ProxyHeader(None, end + 2)
    if len(fields) != 6 or fields[1] not in ("TCP4", "TCP6"):
        raise ProxyProtocolError(f"malformed PROXY protocol v1 line: {data[:end]!r}")
    _, family, source, destination, source_port, destination_port = fields
    version = 4 if family == "TCP4" else 6
    for address in (source, destination):
        _address(address, version)
    for port in (source_port, destination_port):
        if not port.isdigit() or int(port) > 65535 or (len(port) > 1 and port[0] == "0"):
            raise ProxyProtocolError(f"PROXY protocol v1: bad port {port!r}")
    return ProxyHeader(str(ipaddress.ip_address(source)), end + 2)


def _address(text: str, version: int) -> None:
    try:
        parsed = ipaddress.ip_address(text)
    except ValueError:
        raise ProxyProtocolError(f"PROXY protocol v1: {text!r} is not an IP address") from None
    if parsed.version != version:
        raise ProxyProtocolError(f"PROXY protocol v1: {text!r} is not an IPv{version} address")


def _parse_v2(data: bytes) -> ProxyHeader | None:
    signature = data[: len(V2_SIGNATURE)]
    if signature != V2_SIGNATURE[: len(signature)]:
        raise ProxyProtocolError("the connection did not start with a PROXY protocol header")
    if len(data) < _V2_FIXED:
        return None
    version_command, family = data[12], data[13]
    body = int.from_bytes(data[14:16], "big")
    if version_command >> 4 != 2:
        raise ProxyProtocolError(f"PROXY protocol version {version_command >> 4} (only 1 and 2 are known)")
    if body > _V2_MAX_BODY:
        raise ProxyProtocolError(f"PROXY protocol v2 header of {body} bytes (at most {_V2_MAX_BODY})")
    if len(data) < _V2_FIXED + body:
        return None
    length = _V2_FIXED + body
    command = version_command & 0x0F
    if command == 0:  # LOCAL: the balancer's own connection (a health check)
        return ProxyHeader(None, length)
    if command != 1:
        raise ProxyProtocolError(f"PROXY protocol v2 command {command} (0 LOCAL and 1 PROXY are known)")
    addresses = data[_V2_FIXED:length]
    if family == 0x11 and body >= 12:  # TCP over IPv4
        return ProxyHeader(str(ipaddress.IPv4Address(addresses[:4])), length)
    if family == 0x21 and body >= 36:  # TCP over IPv6
        return ProxyHeader(str(ipaddress.IPv6Address(addresses[:16])), length)
    if family == 0x00:  # UNSPEC: nothing said of the client
        return ProxyHeader(None, length)
    raise ProxyProtocolError(
        f"PROXY protocol v2: family 0x{family:02x} with {body} bytes (TCP over IPv4 or IPv6)"
    )
