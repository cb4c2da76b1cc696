"""Raw JSON-RPC load generator for MCP servers over stdio and Streamable HTTP.

No MCP SDK on this side, so every server gets the same bytes and the same
client cost.  It uses only the standard library (``subprocess``, ``socket``,
``selectors``) and msgspec to read answers; no event loop framework.

Every answer is checked: the ``id`` must be the one asked, an error is a
failure, and a ``tools/call`` of ``echo`` must come back with the text sent
(``check="echo"``).  The stdio ceiling (a line echo) sends the request back, so
it is checked by ``id`` only (``check="id"``).

stdio (:class:`StdioServer`):

* :func:`stdio_sequential`: one ``tools/call`` at a time;
* :func:`stdio_pipelined`: ``depth`` requests in flight at every moment;
* :func:`stdio_warm_up`: calls not measured, counted (every peer's warm-up);
* :func:`cold_start`: spawn to ``initialize`` answered.

Streamable HTTP (:func:`http_calls`, :func:`http_warm_up`, :func:`open_idle_sessions`): each
client owns one keep-alive connection and its own MCP session (``initialize``
then ``notifications/initialized``, then ``Mcp-Session-Id`` and
``MCP-Protocol-Version`` on every request).  Answers may be JSON bodies or SSE
streams; bodies may be sized by ``Content-Length``, chunked, or end with the
connection.  Latency is measured from the first byte sent to the last byte of
the HTTP response.

The code lives in private modules, one job each; this module gathers their names:

* ``_load_stats``: :class:`Measurement`, the statistics of one run;
* ``_load_messages``: the messages sent, the answer check, :class:`LoadError`;
* ``_load_stdio``: :class:`StdioServer` and the stdio loads;
* ``_load_http_client``: the raw-socket HTTP/1.1 clients and the response parser;
* ``_load_http``: MCP sessions and the Streamable HTTP loads, the port helpers.
"""

from __future__ import annotations

from benchmarks._load_http import free_port as free_port
from benchmarks._load_http import http_calls as http_calls
from benchmarks._load_http import http_warm_up as http_warm_up
from benchmarks._load_http import open_idle_sessions as open_idle_sessions
from benchmarks._load_http import wait_for_port as wait_for_port
from benchmarks._load_http_client import Flow as Flow
from benchmarks._load_http_client import HttpClients as HttpClients
from benchmarks._load_http_client import HttpRequest as HttpRequest
from benchmarks._load_http_client import HttpResponse as HttpResponse
from benchmarks._load_http_client import HttpTarget as HttpTarget
from benchmarks._load_http_client import ResponseParser as ResponseParser
from benchmarks._load_messages import INITIALIZED as INITIALIZED
from benchmarks._load_messages import PROTOCOL_VERSION as PROTOCOL_VERSION
from benchmarks._load_messages import EchoCall as EchoCall
from benchmarks._load_messages import LoadError as LoadError
from benchmarks._load_messages import initialize_request as initialize_request
from benchmarks._load_stats import Measurement as Measurement
from benchmarks._load_stdio import StdioServer as StdioServer
from benchmarks._load_stdio import cold_start as cold_start
from benchmarks._load_stdio import rss_bytes as rss_bytes
from benchmarks._load_stdio import stdio_pipelined as stdio_pipelined
from benchmarks._load_stdio import stdio_sequential as stdio_sequential
from benchmarks._load_stdio import stdio_warm_up as stdio_warm_up

__all__ = [
    "PROTOCOL_VERSION",
    "HttpTarget",
    "Measurement",
    "StdioServer",
    "cold_start",
    "http_calls",
    "http_warm_up",
    "open_idle_sessions",
    "rss_bytes",
    "stdio_pipelined",
    "stdio_sequential",
    "stdio_warm_up",
]
