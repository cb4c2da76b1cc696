"""Decode + encode cost of typical MCP messages with the generated msgspec types.

Run from the project root::

    python benchmarks/bench_codec.py                 # every revision, compare with the SDK
    python benchmarks/bench_codec.py --revision 2025-11-25 --no-sdk --repeat 11

Prints microseconds per operation (best of ``--repeat`` timeit runs) per message
and revision.  When the official SDK (``mcp`` package, pydantic models) is
installed, the same bytes are also run through ``mcp.types.<Model>``
(``model_validate_json`` / ``model_dump_json``) and the ratio SDK / ours is
printed.

Other benchmark suites can import :func:`message_set` (the message bytes per
revision) and :func:`time_codec` instead of copying them.
"""

from __future__ import annotations

import argparse
import base64
import importlib
import json
import sys
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import msgspec  # noqa: E402

REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
STATELESS = "2026-07-28"


@dataclass(frozen=True)
class Case:
    """One message: the generated type that decodes it and the SDK model, if any."""

    name: str
    revision: str
    type_name: str  # attribute of mcp_trio.types.v<revision>
    payload: bytes
    sdk_model: str | None  # attribute of mcp.types


def _blob(size: int, seed: int) -> str:
    raw = bytes((i * 31 + seed) % 256 for i in range(size))
    return base64.b64encode(raw).decode()


def _request_meta(revision: str, progress_token: Any = None) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if progress_token is not None:
        meta["progressToken"] = progress_token
    if revision >= STATELESS:
        meta["io.modelcontextprotocol/protocolVersion"] = revision
        meta["io.modelcontextprotocol/clientCapabilities"] = {"sampling": {}}
    return meta


def _first_message(revision: str) -> tuple[str, str, dict[str, Any]]:
    if revision >= STATELESS:  # no initialize handshake: server/discover opens the session
        return (
            "DiscoverRequest",
            "DiscoverRequest",
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "server/discover",
                "params": {"_meta": _request_meta(revision)},
            },
        )
    caps: dict[str, Any] = {"roots": {"listChanged": True}, "sampling": {}}
    if revision >= "2025-06-18":
        caps["elicitation"] = {}
    return (
        "InitializeRequest",
        "InitializeRequest",
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": revision,
                "capabilities": caps,
                "clientInfo": {"name": "bench-client", "version": "1.0.0"},
            },
        },
    )


def _tool(i: int, revision: str) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "name": f"tool_{i}",
        "description": f"Tool number {i}: does something useful with its arguments.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "A path"},
                "limit": {"type": "integer", "minimum": 1},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
            },
            "required": ["path"],
        },
    }
    if revision >= "2025-03-26":
        tool["annotations"] = {"readOnlyHint": i % 2 == 0, "openWorldHint": False}
    if revision >= "2025-06-18":
        tool["title"] = f"Tool {i}"
    return tool


def message_set(revision: str) -> list[Case]:
    """The benchmark messages of one revision (valid for its schema)."""
    stateless = revision >= STATELESS
    cases = []

    type_name, sdk, first = _first_message(revision)
    cases.append(
        Case(
            "initialize" if not stateless else "server/discover",
            revision,
            type_name,
            json.dumps(first).encode(),
            sdk,
        )
    )

    call: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "search_files",
            "arguments": {"query": "TODO", "path": "/src", "limit": 50},
        },
    }
    meta = _request_meta(revision, progress_token="p-7")
    call["params"]["_meta"] = meta
    cases.append(
        Case(
            "tools/call request",
            revision,
            "CallToolRequest",
            json.dumps(call).encode(),
            "CallToolRequest",
        )
    )

    content: list[dict[str, Any]] = [
        {"type": "text", "text": "Found 3 matches in 2 files.\n" * 4},
        {"type": "image", "data": _blob(1024, 1), "mimeType": "image/png"},
    ]
    if revision >= "2025-03-26":
        content.append({"type": "audio", "data": _blob(1024, 2), "mimeType": "audio/wav"})
    content.append(
        {
            "type": "resource",
            "resource": {
                "uri": "file:///src/a.py",
                "mimeType": "text/x-python",
                "text": "print('hello')\n" * 20,
            },
        }
    )
    content.append({"type": "resource", "resource": {"uri": "file:///src/b.bin", "blob": _blob(1024, 3)}})
    result: dict[str, Any] = {"content": content, "isError": False}
    if revision >= "2025-06-18":
        result["structuredContent"] = {"matches": 3, "files": ["a.py", "b.bin"]}
    if stateless:
        result["resultType"] = "complete"
    cases.append(
        Case(
            "CallToolResult mixed",
            revision,
            "CallToolResult",
            json.dumps(result).encode(),
            "CallToolResult",
        )
    )

    tools: dict[str, Any] = {"tools": [_tool(i, revision) for i in range(100)]}
    if stateless:
        tools.update({"resultType": "complete", "cacheScope": "public", "ttlMs": 60000})
    cases.append(
        Case(
            "tools/list result x100",
            revision,
            "ListToolsResult",
            json.dumps(tools).encode(),
            "ListToolsResult",
        )
    )
    return cases


def time_codec(
    decode: Callable[[bytes], Any],
    encode: Callable[[Any], Any],
    payload: bytes,
    *,
    repeat: int = 5,
    target: float = 0.02,
) -> tuple[float, float]:
    """Best-of-``repeat`` (decode µs, encode µs) per operation.

    Each of the ``repeat`` timeit runs lasts about ``target`` seconds.
    """
    obj = decode(payload)

    def best(fn: Callable[[], Any]) -> float:
        timer = timeit.Timer(fn)
        probe = 10
        per_call = max(timer.timeit(number=probe) / probe, 1e-9)
        number = max(1, int(target / per_call))
        return min(timer.repeat(repeat=repeat, number=number)) / number * 1e6

    return best(lambda: decode(payload)), best(lambda: encode(obj))


def _ours(case: Case) -> tuple[Callable[[bytes], Any], Callable[[Any], Any]]:
    module = importlib.import_module("mcp_trio.types.v" + case.revision.replace("-", "_"))
    decoder = msgspec.json.Decoder(getattr(module, case.type_name))
    encoder = msgspec.json.Encoder()
    return decoder.decode, encoder.encode


def _sdk(case: Case) -> tuple[Callable[[bytes], Any], Callable[[Any], Any]] | None:
    if case.sdk_model is None:
        return None
    try:
        import mcp.types as sdk_types
    except ImportError:
        return None
    model = getattr(sdk_types, case.sdk_model, None)
    if model is None:
        return None
    try:
        model.model_validate_json(case.payload)
    except Exception:  # noqa: BLE001 - the SDK does not model this revision's shape
        return None
    return model.model_validate_json, lambda obj: obj.model_dump_json(by_alias=True, exclude_none=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--revision", action="append", choices=REVISIONS, help="default: all")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-sdk", action="store_true", help="skip the mcp (pydantic) comparison")
    args = parser.parse_args(argv)

    header = f"{'revision':<11} {'message':<24} {'bytes':>6} {'decode µs':>10} {'encode µs':>10}"
    if not args.no_sdk:
        header += f" {'sdk dec µs':>10} {'sdk enc µs':>10} {'dec ×':>6} {'enc ×':>6}"
    print(header)
    print("-" * len(header))
    for revision in args.revision or REVISIONS:
        for case in message_set(revision):
            decode, encode = _ours(case)
            dec, enc = time_codec(decode, encode, case.payload, repeat=args.repeat)
            line = f"{revision:<11} {case.name:<24} {len(case.payload):>6} {dec:>10.2f} {enc:>10.2f}"
            sdk = None if args.no_sdk else _sdk(case)
            if sdk is not None:
                sdec, senc = time_codec(*sdk, case.payload, repeat=args.repeat)
                line += f" {sdec:>10.2f} {senc:>10.2f} {sdec / dec:>6.1f} {senc / enc:>6.1f}"
            elif not args.no_sdk:
                line += f" {'n/a':>10} {'n/a':>10}"
            print(line)
    if not args.no_sdk:
        print("\n× = SDK time / our time (mcp.types pydantic models; n/a = no matching SDK model)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
