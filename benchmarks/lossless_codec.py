"""What keeping unknown members costs: ``mcp_trio.types.lossless`` against the ordinary codec.

For each message of ``bench_codec.message_set`` (initialize or server/discover,
tools/call, a mixed-content CallToolResult, tools/list with 100 tools), in every
revision: decode and encode with the generated type's ordinary
``msgspec.json`` decoder and encoder (what the session core does), then with
``lossless.decode`` / ``lossless.encode``, on the message as it is and with an
unknown member added to every object a Struct decodes (``+extras``).

Run ``python -m benchmarks.lossless_codec [--quick] [--revision R] [--json]``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any

import msgspec

from benchmarks.bench_codec import REVISIONS, Case, message_set, time_codec
from mcp_trio.types import lossless


def with_extras(value: Any, decoded: Any) -> Any:
    """``value`` (plain JSON) with ``"x-new": 1`` in each object that a Struct of ``decoded`` came from."""
    if isinstance(decoded, msgspec.Struct) and isinstance(value, dict):
        out = dict(value)
        for attr, wire in zip(decoded.__struct_fields__, decoded.__struct_encode_fields__, strict=True):
            if wire in out:
                out[wire] = with_extras(out[wire], getattr(decoded, attr))
        out["x-new"] = 1
        return out
    if isinstance(decoded, list) and isinstance(value, list):
        return [with_extras(v, d) for v, d in zip(value, decoded, strict=True)]
    if isinstance(decoded, dict) and isinstance(value, dict):
        return {k: with_extras(v, decoded[k]) if k in decoded else v for k, v in value.items()}
    return value


def measure(revisions: tuple[str, ...], *, repeat: int, target: float) -> list[dict[str, Any]]:
    rows = []
    for revision in revisions:
        module = importlib.import_module("mcp_trio.types.v" + revision.replace("-", "_"))
        for case in message_set(revision):
            rows.extend(_rows(case, getattr(module, case.type_name), repeat=repeat, target=target))
    return rows


def _rows(case: Case, type_: Any, *, repeat: int, target: float) -> list[dict[str, Any]]:
    decoder = msgspec.json.Decoder(type_)
    encoder = msgspec.json.Encoder()
    extra = json.dumps(with_extras(json.loads(case.payload), decoder.decode(case.payload))).encode()
    rows = []
    for label, payload in ((case.name, case.payload), (case.name + " +extras", extra)):
        plain = time_codec(decoder.decode, encoder.encode, payload, repeat=repeat, target=target)
        kept = time_codec(
            lambda data: lossless.decode(data, type_), lossless.encode, payload, repeat=repeat, target=target
        )
        rows.append(
            {
                "revision": case.revision,
                "message": label,
                "size": len(payload),
                "ordinary_decode_us": plain[0],
                "ordinary_encode_us": plain[1],
                "lossless_decode_us": kept[0],
                "lossless_encode_us": kept[1],
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter timing runs")
    parser.add_argument("--revision", choices=REVISIONS, help="one revision (default: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON array")
    args = parser.parse_args(argv)
    repeat, target = (3, 0.01) if args.quick else (5, 0.02)
    revisions = (args.revision,) if args.revision else REVISIONS
    rows = measure(revisions, repeat=repeat, target=target)
    if args.json:
        print(json.dumps(rows))
        return 0
    print(f"{'revision':<11} {'message':<32} {'bytes':>6} {'decode µs':>17} {'encode µs':>17}")
    print(f"{'':<11} {'':<32} {'':>6} {'ordinary lossless':>17} {'ordinary lossless':>17}")
    for row in rows:
        print(
            f"{row['revision']:<11} {row['message']:<32} {row['size']:>6} "
            f"{row['ordinary_decode_us']:>8.1f} {row['lossless_decode_us']:>8.1f} "
            f"{row['ordinary_encode_us']:>8.1f} {row['lossless_encode_us']:>8.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
