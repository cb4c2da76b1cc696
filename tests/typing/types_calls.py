"""A user's file: mcp_trio.types.lossless, with the types a checker must infer.

Checked by mypy --strict (tests/typing/test_client_typing.py); never run.
"""

from __future__ import annotations

from typing import Any, assert_type

from mcp_trio.types import lossless
from mcp_trio.types import v2025_11_25 as mcp

result = lossless.decode(b"{}", mcp.ListToolsResult)
assert_type(result, mcp.ListToolsResult)
assert_type(lossless.decode("{}", mcp.Tool), mcp.Tool)
assert_type(lossless.decode(b"{}", mcp.ClientRequest), Any)  # a union alias is not a class
assert_type(lossless.encode(result), bytes)
assert_type(lossless.extras(result.tools[0]), dict[str, Any])
assert_type(lossless.replace(result.tools[0], name="x"), mcp.Tool)
lossless.extras({"a": 1})  # type: ignore[arg-type]
lossless.decode(1, mcp.Tool)  # type: ignore[call-overload]
