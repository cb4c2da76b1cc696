"""The generated message types: decode, validate and encode wire messages of one revision."""

import msgspec

from mcp_trio.types import v2025_11_25 as mcp

# Every message of the revision is a msgspec Struct; decoding validates it against the schema.
raw = b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1}}}'
request = msgspec.json.decode(raw, type=mcp.CallToolRequest)
print(type(request.params).__name__, request.params.name, request.params.arguments)

try:
    msgspec.json.decode(
        b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {}}', type=mcp.CallToolRequest
    )
except msgspec.ValidationError as exc:
    print("invalid:", exc)

# Results are built from the same types, and encoded with the specification's field names.
result = mcp.CallToolResult(content=[mcp.TextContent(text="3")], structuredContent={"result": 3})
print(msgspec.json.encode(result).decode())

# The method registry: what each method's params and results are, and who sends it.
spec = mcp.METHODS["tools/call"]
print(spec.kind, spec.direction, spec.params.__name__, [r.__name__ for r in spec.results])
requests = [m for m, s in mcp.METHODS.items() if s.kind == "request"]
print(len(requests), "requests,", len(mcp.METHODS) - len(requests), "notifications in", mcp.PROTOCOL_VERSION)
