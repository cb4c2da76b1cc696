"""Lossless round trips: a newer peer's members pass through an older revision's types."""

import msgspec

from mcp_trio.types import lossless
from mcp_trio.types import v2025_06_18 as mcp

# A tools/list result from a newer server: members 2025-06-18 does not declare, at three depths.
raw = (
    b'{"tools": [{"name": "search", "inputSchema": {"type": "object"}, "x-rank": 1,'
    b' "annotations": {"readOnlyHint": true, "x-cost": "low"}}], "x-page": 2}'
)

# The ordinary decoder (the session's) ignores what the type does not declare.
ordinary = msgspec.json.decode(raw, type=mcp.ListToolsResult)
print("ordinary:", msgspec.json.encode(ordinary).decode())

# The lossless one keeps those members on each Struct and writes them back.
result = lossless.decode(raw, mcp.ListToolsResult)
print("lossless:", lossless.encode(result).decode())
print("kept on the tool:", lossless.extras(result.tools[0]))

# A proxy renames the tool: lossless.replace keeps its members (msgspec's replace makes a new
# instance, which has none); the annotations Struct inside is the same one, with its own.
result.tools = [lossless.replace(result.tools[0], name="docs_search")]
print("renamed: ", lossless.encode(result).decode())
