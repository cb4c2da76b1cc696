"""The official MCP conformance suite, run from Python (``runner``; README.md beside it)."""
