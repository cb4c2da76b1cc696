"""Running the official MCP conformance suite (``@modelcontextprotocol/conformance``).

See ``README.md`` next to this file and ``runner.py``.
"""
