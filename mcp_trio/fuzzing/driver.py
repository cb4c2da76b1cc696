"""Raw drivers: talk to a target below any MCP engine, so anything can be sent.

* :class:`StdioTarget` launches a command and writes bytes to its stdin; it
  reads stdout line by line (each line should be one JSON-RPC message) and
  keeps a tail of stderr.
* :class:`HttpTarget` posts bodies to a Streamable HTTP endpoint over plain
  HTTP/1.1 (h11 on a blocking socket, one connection per exchange), carrying
  ``Mcp-Session-Id`` and ``MCP-Protocol-Version`` once a session exists, and
  reads JSON or SSE answers.

Both are synchronous with a deadline on every wait, so the hypothesis
runner can call them from a test function; nothing blocks longer than the
timeout it was given.  Every byte sent and received is logged, with the time
since the connection opened, in :attr:`Connection.events`.

The connection and what it logs are in :mod:`._connection`, the stdio driver in
:mod:`._stdio_driver`, the HTTP one in :mod:`._http_driver`; their names are re-exported here.
"""

from __future__ import annotations

from ._connection import CommandTarget as CommandTarget
from ._connection import Connection as Connection
from ._connection import HttpExchange as HttpExchange
from ._connection import Received as Received
from ._connection import decode_bytes as decode_bytes
from ._connection import encode_bytes as encode_bytes
from ._connection import loads as loads
from ._connection import messages_sent as messages_sent
from ._http_driver import ACCEPT_BOTH as ACCEPT_BOTH
from ._http_driver import MAX_RESPONSE as MAX_RESPONSE
from ._http_driver import HttpConnection as HttpConnection
from ._http_driver import HttpTarget as HttpTarget
from ._http_driver import replace_headers as replace_headers
from ._stdio_driver import STDERR_TAIL as STDERR_TAIL
from ._stdio_driver import StdioConnection as StdioConnection
from ._stdio_driver import StdioTarget as StdioTarget

__all__ = ["Connection", "HttpExchange", "HttpTarget", "Received", "StdioTarget", "Target", "encode_bytes"]

Target = StdioTarget | HttpTarget
