"""The servers mcp-trio is measured against, each a program of its own.

Every MCP peer offers the tools of ``benchmarks/echo_server.py``: ``echo(text)``
(one text block holding the text) and ``sleep(ms)``.  Each is run as::

    python benchmarks/peers/NAME.py stdio
    python benchmarks/peers/NAME.py http PORT [--json]

* ``sdk_lowlevel``: the official SDK's low-level ``Server`` (``mcp.server.lowlevel``);
  HTTP on uvicorn, SSE answers by default, JSON bodies with ``--json``; its stateless mode
  with ``--stateless``, under N uvicorn workers with ``--workers N`` (``bench_workers.py``).
* ``sdk_highlevel``: the official SDK's high-level ``MCPServer``.
* ``fastmcp_server``: FastMCP.
* ``ts_sdk_server.mjs``: the TypeScript SDK's low-level ``Server`` on Node, run as ``node
  benchmarks/peers/ts_sdk_server.mjs --sdk NODE_MODULES stdio`` (or ``http PORT``): stateful
  Streamable HTTP with JSON answers; the benchmark installs Node and the pinned SDK
  (``benchmarks/_run_node.py``).
* ``raw_trio_echo``: the stdio ceiling: a trio loop that writes every line back.
* ``trivial_hypercorn`` / ``trivial_h11`` / ``trivial_httptools``: the HTTP ceilings: an
  ASGI app on hypercorn (trio worker), a bare h11-over-trio loop, and the same loop parsing
  with ``httptools`` (C), all answering every JSON-RPC request with a fixed-shape JSON
  result (``_trivial.py``).

The asyncio peers must never be imported by trio code (and vice versa): they
run in their own processes.
"""
