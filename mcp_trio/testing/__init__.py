"""Helpers for testing MCP servers, clients and transports (in the spirit of ``trio.testing``).

* :func:`check_message_channel`: the contract the engine relies on, checked on a channel of
  your own (it runs against every channel mcp-trio ships);
* :func:`serve_raw` and :class:`RawPeer`: a server serving one session in memory, driven with
  raw JSON-RPC (broken messages included);
* :func:`check_store`: the contract of ``mcp_trio.store``, checked on a store of your own (the
  in-memory store and the one on Redis pass it);
* :func:`open_memory_transport_pair`: two connected in-memory channels.
"""

from ..transports.memory import open_memory_transport_pair as open_memory_transport_pair
from ._channel import MakePair as MakePair
from ._channel import check_message_channel as check_message_channel
from ._peer import RawPeer as RawPeer
from ._peer import serve_raw as serve_raw
from ._store import STORE_CHECKS as STORE_CHECKS
from ._store import OpenPair as OpenPair
from ._store import check_store as check_store

__all__ = [
    "STORE_CHECKS",
    "MakePair",
    "OpenPair",
    "RawPeer",
    "check_message_channel",
    "check_store",
    "open_memory_transport_pair",
    "serve_raw",
]
